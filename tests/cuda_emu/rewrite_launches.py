"""rewrite_launches.py - turn CUDA's `kernel<<<cfg>>>(args)` into plain C++.

`k<T, 1><<<grid, block, shmem, stream>>>(a, b)` becomes
`pg_emu_launch(pg_emu_cfg{grid, block, shmem, stream}, k<T, 1>, a, b)`
(emu_kernel.h). The kernel expression is found by walking back from `<<<`
over a balanced template argument list and an identifier; the arguments by
walking forward over balanced parentheses. Everything else of the file is
left as it is, so line numbers stay those of csrc/backends/cuda/kernels/*.cu in compiler messages.
"""
import re
import sys


def _match_back(src, i, open_ch, close_ch):
    """Index of the open_ch matching the close_ch at src[i]."""
    depth = 0
    while i >= 0:
        if src[i] == close_ch:
            depth += 1
        elif src[i] == open_ch:
            depth -= 1
            if depth == 0:
                return i
        i -= 1
    raise ValueError("unbalanced " + close_ch)


def _match_fwd(src, i, open_ch, close_ch):
    depth = 0
    while i < len(src):
        if src[i] == open_ch:
            depth += 1
        elif src[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced " + open_ch)


def rewrite(src):
    out = src
    while True:
        at = out.find("<<<")
        if at < 0:
            return out
        end_cfg = out.find(">>>", at)
        j = at - 1
        while out[j].isspace():
            j -= 1
        if out[j] == ">":
            j = _match_back(out, j, "<", ">") - 1
        while j >= 0 and (out[j].isalnum() or out[j] in "_:"):
            j -= 1
        start = j + 1
        kernel = out[start:at].strip()
        if not re.match(r"[A-Za-z_]", kernel):
            raise ValueError(f"cannot find the kernel before <<< at offset {at}")
        cfg = out[at + 3:end_cfg]
        p = end_cfg + 3
        while out[p].isspace():
            p += 1
        if out[p] != "(":
            raise ValueError(f"no argument list after >>> at offset {end_cfg}")
        close = _match_fwd(out, p, "(", ")")
        args = out[p + 1:close]
        call = f"pg_emu_launch(pg_emu_cfg{{{cfg}}}, {kernel}" + (f", {args})" if args.strip() else ")")
        out = out[:start] + call + out[close + 1:]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        text = f.read()
    sys.stdout.write(rewrite(text))
