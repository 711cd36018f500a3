"""python -m pygpu: forwards to the main job, pygpu/tools/main_job.py (the tools live in pygpu.tools)."""
from pygpu.tools.main_job import main

if __name__ == "__main__":
    raise SystemExit(main())
