"""pygpu.cost: what moving data costs, measured, predicted and explained.

    prof = pygpu.cost.calibrate("sim:0")        # or load_profile("h100_pcie")
    with pygpu.track(call_sites=True) as rec:
        step()
    pygpu.cost.predict(rec, prof)               # transfer and compute time on that device
    pygpu.cost.explain(rec, prof)               # the REST-API view, ending in a verdict

calibrate.py measures a DeviceProfile (profile.py); profiles/*.json are datasheet
profiles of real GPUs; predict.py and explain.py read track() records; budget.py
is pygpu.transfer_budget, a context manager for tests."""
from .budget import TransferBudgetError, transfer_budget
from .calibrate import cache_dir, cached_profile, calibrate, fit_link, recalibrate
from .explain import Report, explain
from .predict import Prediction, crossover_n, predict
from .profile import DeviceProfile, Link, datasheet_names, link_model_profile, load_profile

__all__ = ["calibrate", "recalibrate", "cached_profile", "cache_dir", "fit_link", "DeviceProfile",
           "Link", "load_profile", "datasheet_names", "link_model_profile", "predict", "Prediction",
           "crossover_n", "explain", "Report", "transfer_budget", "TransferBudgetError"]
