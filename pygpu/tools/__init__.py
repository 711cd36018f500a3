"""pygpu.tools: the command-line tools and demos, kept apart from the library.

main_job.py      the main job, `python -m pygpu` (matmul round-trip cost, an MLP's transfers)
mlp_demo.py      the short MLP training the main job runs and explains
selftest.py      `python -m pygpu.selftest`: every op on a device against NumPy
smi.py           `python -m pygpu.smi`: an nvidia-smi-like table of pygpu's devices
plot_benchmarks.py  `python -m pygpu.tools.plot_benchmarks`: pytest-benchmark JSON to a PNG
_plots.py        the figures both of them draw (matplotlib, imported only when asked)

Nothing in the library imports this package; pygpu/__main__.py, pygpu/smi.py and
pygpu/selftest.py are one-line forwarders so that the documented commands keep working."""
