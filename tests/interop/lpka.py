#!/usr/bin/env python3
"""An independent loader of lpk program artifacts, written from
docs/artifact.md alone (standard library plus cbor2).

Usage:
    lpka.py ARTIFACT -p N=4 [-p M=2] [-e CMD]...

CMD is `tasks`, `children TASK` or `parents TASK` with TASK as
`kernel@LINE(var=INT, ...)` (the kernel may be omitted, `@LINE:COL(...)`
picks one of several calls on a line). Without -e, commands are read from
stdin, one a line. Each answer is one JSON line, as `lpkc query --format
json` prints it: {"cmd", "tasks": [{"kernel", "line", "column", "vars",
"tiles"?}]} or {"cmd", "error"}.
"""

import json
import math
import re
import struct
import sys
import zlib

try:
    import cbor2
except ImportError:  # the interop test must fail loudly, not skip
    sys.stderr.write("lpka.py needs the cbor2 package: pip install cbor2\n")
    sys.exit(3)

MAGIC = b"LPKA\x00\r\n\x1a"
HEADER = 24
MAX_PAYLOAD = 16 << 20
# Format 2 added zero matrices (a `zero` flag per matrix). They change what
# a run reads, not tasks, children or parents, which is all this loader
# answers, so it reads versions 1 and 2 alike.
MAJORS = (1, 2)
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
BUDGET = 1 << 34


class LoadError(Exception):
    pass


class EvalError(Exception):
    pass


class Reject(Exception):
    """A plan candidate is abandoned."""


class Budget(Exception):
    pass


# ---------------------------------------------------------------- container

def load(path):
    data = open(path, "rb").read()
    if data.lstrip()[:1] == b"{":
        twin = json.loads(data)
        if twin.get("format") != "lpka":
            raise LoadError("bad magic (JSON twin without format lpka)")
        major, minor = twin.get("version", [0, 0])
        if major not in MAJORS:
            raise LoadError("unsupported major version %d" % major)
        return twin["artifact"]
    if data[: min(8, len(data))] != MAGIC[: min(8, len(data))]:
        raise LoadError("bad magic")
    if len(data) < HEADER:
        raise LoadError("truncated header")
    major, minor, plen, clen, crc = struct.unpack_from("<HHIII", data, 8)
    if major not in MAJORS:
        raise LoadError("unsupported major version %d" % major)
    if plen > MAX_PAYLOAD or clen > MAX_PAYLOAD:
        raise LoadError("payload too large")
    payload = data[HEADER:]
    if len(payload) < plen:
        raise LoadError("truncated payload")
    if len(payload) > plen:
        raise LoadError("length mismatch")
    if zlib.crc32(payload) & 0xFFFFFFFF != crc:
        raise LoadError("checksum mismatch")
    d = zlib.decompressobj()
    cbor = d.decompress(payload, clen + 1)
    if len(cbor) != clen or not d.eof:
        raise LoadError("payload does not inflate to the declared length")
    return cbor2.loads(cbor)


# -------------------------------------------------------------- expressions

def variant(v):
    """An externally tagged enum value: (name, data)."""
    if isinstance(v, str):
        return v, None
    ((k, x),) = v.items()
    return k, x


def chk(x):
    if isinstance(x, bool) or not isinstance(x, int):
        raise EvalError("type")
    if x < I64_MIN or x > I64_MAX:
        raise EvalError("overflow")
    return x


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def floor_div(a, b):
    if b == 0:
        raise EvalError("division by zero")
    return chk(a // b)


def floor_mod(a, b):
    if b == 0:
        raise EvalError("division by zero")
    if a == I64_MIN and b == -1:
        raise EvalError("overflow")
    return a % b


def ceil_div(a, b):
    q = floor_div(a, b)
    return chk(q + 1) if floor_mod(a, b) != 0 else q


def ceil_log(a, b):
    if a <= 0 or b <= 0:
        raise EvalError("log of non-positive")
    if b == 1:
        raise EvalError("division by zero")
    k, p = 0, 1
    while p < a:
        p *= b
        k += 1
    return k


def floor_log(a, b):
    if a <= 0 or b <= 0:
        raise EvalError("log of non-positive")
    if b == 1:
        raise EvalError("division by zero")
    k, p = 0, b
    while p <= a:
        p *= b
        k += 1
    return k


def exact_log(v, b):
    if b < 2 or v < 1:
        return None
    k = 0
    while v % b == 0:
        v //= b
        k += 1
    return k if v == 1 else None


def real_to_int(x):
    if not math.isfinite(x) or abs(x) >= 9.2e18:
        raise EvalError("not finite")
    return int(x)


class Pool:
    def __init__(self, nodes):
        self.nodes = [variant(n) for n in nodes]
        for i, (k, x) in enumerate(self.nodes):
            kids = []
            if k in ("unary", "call"):
                kids = [x[1]]
            elif k in ("binary", "call2"):
                kids = [x[1], x[2]]
            for c in kids:
                if not (0 <= c < i):
                    raise LoadError("expression %d refers forward to %d" % (i, c))

    def eval(self, r, params, slots):
        k, x = self.nodes[r]
        if k == "int":
            return x
        if k == "real":
            return float(x)
        if k == "bool":
            return bool(x)
        if k == "param":
            if x >= len(params):
                raise EvalError("reference")
            return params[x]
        if k == "slot":
            if x >= len(slots):
                raise EvalError("reference")
            return slots[x]
        if k == "unary":
            op, a = x
            v = self.eval(a, params, slots)
            if op == "neg":
                if isinstance(v, bool):
                    raise EvalError("type")
                return chk(-v) if is_int(v) else -v
            return not self.bool_(a, params, slots)
        if k == "binary":
            op, a, b = x
            if op == "and":
                return self.bool_(a, params, slots) and self.bool_(b, params, slots)
            if op == "or":
                return self.bool_(a, params, slots) or self.bool_(b, params, slots)
            return binary(op, self.eval(a, params, slots), self.eval(b, params, slots))
        if k == "call":
            f, a = x
            return call(f, self.eval(a, params, slots))
        if k == "call2":
            f, a, b = x
            va, vb = self.eval(a, params, slots), self.eval(b, params, slots)
            if not (is_int(va) and is_int(vb)):
                raise EvalError("type")
            if f == "ceil_div":
                return ceil_div(va, vb)
            if f == "ceil_log_b":
                return ceil_log(va, vb)
            return floor_log(va, vb)
        raise EvalError("unknown node " + k)

    def int_(self, r, params, slots):
        v = self.eval(r, params, slots)
        if not is_int(v):
            raise EvalError("type")
        return v

    def bool_(self, r, params, slots):
        v = self.eval(r, params, slots)
        if not isinstance(v, bool):
            raise EvalError("type")
        return v


def to_f(v):
    if isinstance(v, bool):
        raise EvalError("type")
    return float(v)


def binary(op, a, b):
    if op in ("eq", "ne") and isinstance(a, bool) and isinstance(b, bool):
        return (a == b) if op == "eq" else (a != b)
    if isinstance(a, bool) or isinstance(b, bool):
        raise EvalError("type")
    if is_int(a) and is_int(b):
        if op == "add":
            return chk(a + b)
        if op == "sub":
            return chk(a - b)
        if op == "mul":
            return chk(a * b)
        if op == "floor_div":
            return floor_div(a, b)
        if op == "mod":
            return floor_mod(a, b)
        if op == "pow":
            if b < 0:
                raise EvalError("negative exponent")
            if a == 0:
                return 1 if b == 0 else 0
            if a == 1:
                return 1
            if a == -1:
                return 1 if b % 2 == 0 else -1
            if b > 64:
                raise EvalError("overflow")
            return chk(a ** b)
        if op == "min":
            return min(a, b)
        if op == "max":
            return max(a, b)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return cmp(op, a, b)
    if op == "min":
        return b if to_f(b) < to_f(a) else a
    if op == "max":
        return b if to_f(b) > to_f(a) else a
    x, y = to_f(a), to_f(b)
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    if op in ("div", "floor_div", "mod"):
        if y == 0.0:
            raise EvalError("division by zero")
        if op == "div":
            return x / y
        if op == "floor_div":
            return float(math.floor(x / y))
        return x - y * math.floor(x / y)
    if op == "pow":
        if y < 0.0 and x == 0.0:
            raise EvalError("division by zero")
        return math.pow(x, y)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return cmp(op, x, y)
    raise EvalError("type")


def cmp(op, x, y):
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op]


def call(f, v):
    if isinstance(v, bool):
        raise EvalError("type")
    if f in ("ceil", "floor"):
        if is_int(v):
            return v
        return real_to_int(math.ceil(v) if f == "ceil" else math.floor(v))
    if f == "abs":
        return chk(abs(v)) if is_int(v) else abs(v)
    if f in ("log2", "log"):
        x = float(v)
        if x <= 0.0:
            raise EvalError("log of non-positive")
        return math.log2(x) if f == "log2" else math.log(x)
    if not is_int(v):
        raise EvalError("type")
    return ceil_log(v, 2) if f == "ceil_log2" else floor_log(v, 2)


# -------------------------------------------------------------------- plans

class Runner:
    def __init__(self, pool, params):
        self.pool = pool
        self.params = params
        self.budget = BUDGET

    def spend(self):
        if self.budget == 0:
            raise Budget()
        self.budget -= 1

    def run(self, plan, tile, emit):
        slots = [0] * plan["slots"]
        d = plan["depth"]
        slots[d : d + len(tile)] = tile
        self.steps(plan["steps"], 0, slots, d, emit)

    def steps(self, steps, k, slots, depth, emit):
        pool, params = self.pool, self.params
        try:
            while k < len(steps):
                kind, s = variant(steps[k])
                if kind == "set":
                    slots[s["slot"]] = pool.int_(s["value"], params, slots)
                elif kind == "set_div":
                    n = pool.int_(s["num"], params, slots)
                    if floor_mod(n, s["den"]) != 0:
                        return
                    slots[s["slot"]] = floor_div(n, s["den"])
                elif kind == "set_log":
                    e = exact_log(pool.int_(s["value"], params, slots), s["base"])
                    if e is None:
                        return
                    slots[s["slot"]] = e
                elif kind == "check":
                    if pool.bool_(s["cond"], params, slots) is not True:
                        return
                elif kind == "check_range":
                    lo = pool.int_(s["lo"], params, slots)
                    hi = pool.int_(s["hi"], params, slots)
                    if not (lo <= slots[s["slot"]] < hi):
                        return
                elif kind == "range":
                    lo = pool.int_(s["lo"], params, slots)
                    hi = pool.int_(s["hi"], params, slots)
                    step = pool.int_(s["step"], params, slots)
                    if step <= 0:
                        return
                    start = lo
                    for l in s["lower"]:
                        l = pool.int_(l, params, slots)
                        if l > start:
                            start = chk(chk(ceil_div(chk(l - lo), step) * step) + lo)
                    for u in s["upper"]:
                        hi = min(hi, pool.int_(u, params, slots))
                    v = start
                    while v < hi:
                        self.spend()
                        slots[s["slot"]] = v
                        self.steps(steps, k + 1, slots, depth, emit)
                        v += step
                        if v > I64_MAX:
                            break
                    return
                else:
                    raise LoadError("unknown plan step " + kind)
                k += 1
        except EvalError:
            return
        self.spend()
        emit(list(slots[:depth]))


# ------------------------------------------------------------------ program

class Program:
    def __init__(self, artifact, given):
        p = artifact["program"]
        self.p = p
        self.pool = Pool(p["exprs"])
        self.stmts = p["statements"]
        self.plans = p["plans"]
        params = []
        for decl in p["params"]:
            if decl["name"] in given:
                params.append(given[decl["name"]])
            elif decl.get("default") is not None:
                params.append(decl["default"])
            else:
                raise LoadError("parameter %s needs a value" % decl["name"])
        self.params = params
        for r in p["requires"]:
            if self.pool.bool_(r, params, []) is not True:
                raise LoadError("a require is not met")
        self.extents = [[self.pool.int_(e, params, []) for e in m["extents"]] for m in p["matrices"]]
        self.runner = Runner(self.pool, params)

    # Sequential order.
    def key(self, task):
        s, v = task
        order = self.stmts[s]["order"]
        out = []
        for i, o in enumerate(order):
            out.append(o)
            if i < len(v):
                out.append(v[i])
        return out

    def sort_key(self, item):
        # A missing position sorts first: compare keys as lists (a prefix is
        # smaller), which is the same.
        (task, tile) = item
        return (self.key(task), tile[0], tile[1])

    def in_domain(self, s, v):
        if not (0 <= s < len(self.stmts)):
            return False
        st = self.stmts[s]
        if len(v) != len(st["vars"]):
            return False
        for item in st["domain"]:
            kind, d = variant(item)
            if kind == "loop":
                x = v[d["slot"]]
                lo = self.pool.int_(d["lo"], self.params, v)
                hi = self.pool.int_(d["hi"], self.params, v)
                step = self.pool.int_(d["step"], self.params, v)
                if step <= 0 or x < lo or x >= hi or (x - lo) % step != 0:
                    return False
            else:
                if self.pool.bool_(d["cond"], self.params, v) != d["positive"]:
                    return False
        return True

    def tile(self, acc, v):
        return (acc["matrix"], [self.pool.int_(i, self.params, v) for i in acc["indices"]])

    def children(self, task):
        s, v = task
        st = self.stmts[s]
        out = []
        for w, acc in enumerate(st["writes"]):
            t = self.tile(acc, v)
            for part in self.plans[s]["writes"][w]["partners"]:
                s2, a2 = part["stmt"], part["access"]
                reader = self.stmts[s2]
                found = []
                self.runner.run(self.plans[s2]["reads"][a2]["inverse"], t[1], found.append)
                for v2 in found:
                    if s2 == s and v2 == v:
                        continue
                    earlier = any(
                        e["matrix"] == t[0] and self.tile(e, v2)[1] == t[1]
                        for e in reader["reads"][:a2]
                    )
                    if not earlier:
                        out.append(((s2, v2), t))
        return self.finish(out)

    def parents(self, task):
        s, v = task
        st = self.stmts[s]
        out = []
        seen = []
        for r, acc in enumerate(st["reads"]):
            t = self.tile(acc, v)
            if t in seen:
                continue
            seen.append(t)
            for part in self.plans[s]["reads"][r]["partners"]:
                s2, a2 = part["stmt"], part["access"]
                found = []
                self.runner.run(self.plans[s2]["writes"][a2]["inverse"], t[1], found.append)
                for v2 in found:
                    if not (s2 == s and v2 == v):
                        out.append(((s2, v2), t))
        return self.finish(out)

    def finish(self, pairs):
        pairs.sort(key=self.sort_key)
        out = []
        for p in pairs:
            if not out or out[-1] != p:
                out.append(p)
        # Group consecutive pairs of one task, as lpkc prints them.
        grouped = []
        for task, t in out:
            if grouped and grouped[-1][0] == task:
                grouped[-1][1].append(t)
            else:
                grouped.append((task, [t]))
        return grouped

    def tasks(self):
        out = []
        self.walk(self.p["tree"], [], out)
        return [(t, []) for t in out]

    def walk(self, nodes, slots, out):
        for node in nodes:
            kind, n = variant(node)
            if kind == "loop":
                lo = self.pool.int_(n["lo"], self.params, slots)
                hi = self.pool.int_(n["hi"], self.params, slots)
                step = self.pool.int_(n["step"], self.params, slots)
                if step <= 0:
                    raise EvalError("loop step must be positive")
                v = lo
                while v < hi:
                    self.walk(n["body"], slots[: n["slot"]] + [v], out)
                    v += step
            elif kind == "if":
                body = n["else_body"]
                for cond, b in n["branches"]:
                    if self.pool.bool_(cond, self.params, slots):
                        body = b
                        break
                self.walk(body, slots, out)
            else:
                st = self.stmts[n]
                out.append((n, list(slots[: len(st["vars"])])))

    # Names.
    def task_json(self, task, tiles):
        s, v = task
        st = self.stmts[s]
        j = {
            "kernel": self.p["kernels"][st["kernel"]]["name"],
            "line": st["line"],
            "column": st["column"],
            "vars": dict(zip(st["vars"], v)),
        }
        if tiles:
            j["tiles"] = [self.tile_name(t) for t in tiles]
        return j

    def tile_name(self, t):
        m, idx = t
        return "%s[%s]" % (self.p["matrices"][m]["name"], ", ".join(str(i) for i in idx))

    def parse_task(self, text):
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z_0-9]*)?\s*@\s*(\d+)\s*(?::\s*(\d+))?\s*\((.*)\)\s*", text)
        if not m:
            raise ValueError("expected kernel@LINE(var=INT, ...), found `%s`" % text)
        kernel, line, col, body = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        cands = [
            i
            for i, st in enumerate(self.stmts)
            if st["line"] == line
            and (col is None or st["column"] == int(col))
            and (kernel is None or self.p["kernels"][st["kernel"]]["name"] == kernel)
        ]
        if len(cands) != 1:
            raise ValueError("no single statement at line %d" % line)
        s = cands[0]
        vals = {}
        for part in [x for x in body.split(",") if x.strip()]:
            name, _, value = part.partition("=")
            vals[name.strip()] = int(value.strip())
        st = self.stmts[s]
        if sorted(vals) != sorted(st["vars"]):
            raise ValueError("the task needs values for %s" % ", ".join(st["vars"]))
        v = [vals[n] for n in st["vars"]]
        if not self.in_domain(s, v):
            raise ValueError("%s is not a task of this instance" % text.strip())
        return (s, v)

    def command(self, line):
        word, _, rest = line.strip().partition(" ")
        if word == "tasks" and not rest.strip():
            answer = self.tasks()
        elif word == "children":
            answer = self.children(self.parse_task(rest))
        elif word == "parents":
            answer = self.parents(self.parse_task(rest))
        else:
            raise ValueError("unknown command `%s`" % word)
        return {"cmd": line.strip(), "tasks": [self.task_json(t, tiles) for t, tiles in answer]}


def main(argv):
    path, given, cmds = None, {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-p", "--param"):
            name, _, value = argv[i + 1].partition("=")
            given[name.strip()] = int(value)
            i += 2
        elif a in ("-e", "--eval"):
            cmds.append(argv[i + 1])
            i += 2
        else:
            path = a
            i += 1
    if path is None:
        sys.stderr.write(__doc__)
        return 2
    try:
        prog = Program(load(path), given)
    except (LoadError, EvalError, KeyError, ValueError, cbor2.CBORDecodeError) as e:
        sys.stderr.write("error: %s\n" % e)
        return 1
    if not cmds:
        cmds = [l for l in sys.stdin.read().splitlines() if l.strip()]
    failed = False
    for c in cmds:
        try:
            out = prog.command(c)
        except (ValueError, EvalError, Budget) as e:
            failed = True
            out = {"cmd": c.strip(), "error": str(e)}
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
