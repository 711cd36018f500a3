"""python -m pygpu.smi: forwards to pygpu/tools/smi.py (the tools live in pygpu.tools)."""
from pygpu.tools.smi import main, table  # noqa: F401  (table: for `from pygpu.smi import table`)

if __name__ == "__main__":
    raise SystemExit(main())
