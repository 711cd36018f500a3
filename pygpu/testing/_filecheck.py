"""torch.testing.FileCheck (torch._C.FileCheck): LLVM FileCheck's directives over a string or
a graph's IR text, with PyTorch's matching rules (torch/csrc/jit/testing/file_check.cpp).

Checks run in order from where the previous one matched:
- check(s): s occurs after the previous match;
- check_next(s): s occurs on the line right after the previous match's line;
- check_same(s): s occurs on the same line as the previous match, after it;
- check_not(s): s does not occur between the previous match and the next positive check's
  match (or the end of the text);
- check_count(s, n, exactly=False): s occurs n times after the previous match (exactly: and
  no more before the next check's match); n == 0 with exactly is check_not;
- check_dag(s): consecutive check_dags match in any order after the previous match; the
  next check starts after the last of them;
- check_regex(r): as check, with a regular expression.
run(text) (or run(checks, text) with `# CHECK:` style directives in the first string) raises
RuntimeError naming the failed check, as PyTorch's does."""
import re

_DIRECTIVES = {"CHECK": "check", "CHECK-NEXT": "check_next", "CHECK-SAME": "check_same",
               "CHECK-NOT": "check_not", "CHECK-DAG": "check_dag"}


class _Check:
    __slots__ = ("kind", "text", "count", "regex")

    def __init__(self, kind, text, count=1, regex=False):
        self.kind, self.text, self.count, self.regex = kind, text, count, regex

    def find(self, s, start, end=None):
        """(start, end) of the first match in s[start:end], or None."""
        end = len(s) if end is None else end
        if self.regex:
            m = re.compile(self.text).search(s, start, end)
            return (m.start(), m.end()) if m else None
        i = s.find(self.text, start, end)
        return None if i < 0 else (i, i + len(self.text))

    def __str__(self):
        names = {"check": "CHECK", "check_next": "CHECK-NEXT", "check_same": "CHECK-SAME",
                 "check_not": "CHECK-NOT", "check_dag": "CHECK-DAG",
                 "check_count": f"CHECK-COUNT-{self.count}"}
        return f"{names[self.kind]}: {self.text}"


class FileCheck:
    """Builder of checks; run() applies them (torch.testing.FileCheck)."""

    def __init__(self):
        self._checks = []
        self._has_run = False

    def _add(self, kind, text, count=1, regex=False):
        if not isinstance(text, str):
            raise TypeError(f"{kind}(): expected a str, got {type(text).__name__}")
        self._checks.append(_Check(kind, text, count, regex))
        return self

    def check(self, s):
        return self._add("check", s)

    def check_next(self, s):
        return self._add("check_next", s)

    def check_same(self, s):
        return self._add("check_same", s)

    def check_not(self, s):
        return self._add("check_not", s)

    def check_dag(self, s):
        return self._add("check_dag", s)

    def check_regex(self, s):
        return self._add("check", s, regex=True)

    def check_count(self, s, count, exactly=False):
        if isinstance(s, int) and isinstance(count, str):  # PyTorch accepts either order
            s, count = count, s
        if count == 0:
            if not exactly:
                raise RuntimeError("check_count: Count == 0 && !exactly doesn't do anything")
            return self._add("check_not", s)
        self._add("check_count", s, count)
        if exactly:
            self._add("check_not", s)
        return self

    def run(self, *args):
        """run(text), run(graph), or run(checks_text, text_or_graph)."""
        if len(args) == 2:
            self._checks = _parse_directives(args[0])
            text = args[1]
        elif len(args) == 1:
            text = args[0]
        else:
            raise TypeError(f"run() takes 1 or 2 arguments, got {len(args)}")
        self._has_run = True
        _run(self._checks, text if isinstance(text, str) else str(text))

    def __repr__(self):
        return "\n".join(str(c) for c in self._checks)


def _parse_directives(text):
    checks = []
    for m in re.finditer(r"(CHECK(?:-NEXT|-SAME|-NOT|-DAG|-COUNT-(?:EXACTLY-)?\d+)?):(.*)",
                         text):
        name, body = m.group(1), m.group(2).strip()
        if name.startswith("CHECK-COUNT-"):
            exactly = "EXACTLY" in name
            n = int(name.rsplit("-", 1)[1])
            FileCheck.check_count(_Holder(checks), body, n, exactly)
        else:
            checks.append(_Check(_DIRECTIVES[name], body))
    if not checks:
        raise RuntimeError("no checks found in the check string")
    return checks


class _Holder(FileCheck):
    def __init__(self, checks):
        self._checks = checks


def _fail(check, text, at):
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    if check.kind == "check_not":
        msg = f'Expected to not find "{check.text}" but found it'
    elif check.kind == "check_count":
        msg = f'Expected to find "{check.text}" {check.count} times but did not find it'
    else:
        msg = f'Expected to find "{check.text}" but did not find it'
    raise RuntimeError(f"{msg}\nSearched string:\n{line}\nFrom {check}\n")


def _run(checks, text):
    """Apply the checks to text, PyTorch's way: groups of NOTs bound by the next match."""
    pos = 0           # the previous match's end
    prev_start = 0    # the previous match's start (check_next/check_same count lines from it)
    pending_nots = []
    i = 0
    while i < len(checks):
        c = checks[i]
        if c.kind == "check_not":
            pending_nots.append(c)
            i += 1
            continue
        if c.kind == "check_dag":
            group = []
            while i < len(checks) and checks[i].kind == "check_dag":
                group.append(checks[i])
                i += 1
            spans = []
            for d in group:
                m = d.find(text, pos)
                if m is None:
                    _fail(d, text, pos)
                spans.append(m)
            start, end = min(s for s, _ in spans), max(e for _, e in spans)
        else:
            i += 1
            start, end = _match(c, text, pos)
        for n in pending_nots:
            hit = n.find(text, pos, start)
            if hit is not None:
                _fail(n, text, hit[0])
        pending_nots = []
        prev_start, pos = start, end
    for n in pending_nots:
        hit = n.find(text, pos)
        if hit is not None:
            _fail(n, text, hit[0])
    del prev_start


def _match(c, text, pos):
    if c.kind == "check":
        m = c.find(text, pos)
        if m is None:
            _fail(c, text, pos)
        return m
    if c.kind == "check_count":
        first, cur = None, pos
        for _ in range(c.count):
            m = c.find(text, cur)
            if m is None:
                _fail(c, text, cur)
            first = m[0] if first is None else first
            cur = m[1]
        return first, cur
    line_end = text.find("\n", pos)
    if c.kind == "check_same":
        m = c.find(text, pos, len(text) if line_end < 0 else line_end)
        if m is None:
            _fail(c, text, pos)
        return m
    # check_next: on the line after the previous match's
    if line_end < 0:
        _fail(c, text, pos)
    next_end = text.find("\n", line_end + 1)
    m = c.find(text, line_end + 1, len(text) if next_end < 0 else next_end)
    if m is None:
        _fail(c, text, line_end + 1)
    return m
