"""python -m pygpu.selftest: forwards to pygpu/tools/selftest.py (the tools live in pygpu.tools)."""
from pygpu.tools.selftest import main

if __name__ == "__main__":
    raise SystemExit(main())
