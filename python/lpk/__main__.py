"""``python -m lpk worker``: a distributed worker with Python user kernels
(see ``python -m lpk worker --help`` and docs/python.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import List, Optional

WORKER_HELP = """\
A distributed lpk worker, as `lpkc worker`, that also runs your Python
kernels: it serves every run in one Redis whose kernels it has (the
standard ones and those of --kernels), renewing a lease on each task it
holds, taking over tasks whose lease expired, and exiting after --idle
seconds without work. Runs that call a kernel it lacks are left to other
workers (`lpkc status RUN` names kernels no live worker has).

Kernels: each --kernels MODULE is imported (from sys.path, which holds the
current directory); every public module-level name bound to an
@lpk.kernel(results=..., shape=...) function is a kernel of that name.
A module with no decorated function is an error.

Ctrl-C or SIGTERM stops it cleanly: it finishes and completes the tasks
it holds, then exits with status 0. A bad module, a bad option or an
unreachable Redis exit with status 2 and a message."""


class _Terminated(Exception):
    """Raised by the SIGTERM handler, to stop the worker."""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (0 < value <= 86400 * 365):
        raise argparse.ArgumentTypeError(f"{text} is not above 0 and at most a year")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lpk", description="lpk from Python.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    w = sub.add_parser(
        "worker",
        help="a distributed worker with Python user kernels",
        description=WORKER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    w.add_argument("--redis", required=True, metavar="URL",
                   help="the Redis that holds the runs, e.g. redis://127.0.0.1:6379")
    w.add_argument("--kernels", action="append", default=[], metavar="MODULE",
                   help="an importable module whose @lpk.kernel functions are kernels "
                        "(repeatable), e.g. mypackage.kernels")
    w.add_argument("--threads", type=int, default=1, metavar="T",
                   help="threads taking tasks, each one task at a time (default 1; "
                        "Python kernels hold the GIL while Python code runs)")
    w.add_argument("--idle", type=_seconds, default=60.0, metavar="S",
                   help="exit after this many seconds without work, or without reaching "
                        "Redis (default 60)")
    w.add_argument("--lease", type=_seconds, default=30.0, metavar="S",
                   help="seconds after which a task this worker stops renewing (it died or "
                        "hung) is taken over by another worker; renewed every third of it "
                        "(default 30)")
    w.add_argument("--cache-mb", type=int, default=1024, metavar="MB",
                   help="megabytes of tiles to keep for tasks that read them again "
                        "(default 1024)")
    w.add_argument("--name", metavar="NAME",
                   help="the worker's name in Redis (default HOST-PID)")
    w.add_argument("--inject-faults", metavar="SPEC",
                   help="testing aid: fail on purpose, as lpkc worker --inject-faults")
    w.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    return p


def _fail(message: str) -> int:
    print(f"python -m lpk worker: {message}", file=sys.stderr)
    return 2


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated()


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    import lpk
    from lpk._worker import collect_kernels

    if not 1 <= args.threads <= 1024:
        return _fail(f"--threads must be 1 to 1024, found {args.threads}")
    if args.cache_mb < 0:
        return _fail(f"--cache-mb must be at least 0, found {args.cache_mb}")
    try:
        kernels = collect_kernels(list(args.kernels))
    except (ValueError, TypeError) as e:
        return _fail(str(e))
    signal.signal(signal.SIGTERM, _terminate)
    try:
        report = lpk.worker(
            args.redis,
            kernels,
            name=args.name,
            threads=args.threads,
            lease=args.lease,
            idle=args.idle,
            cache_mb=args.cache_mb,
            quiet=args.quiet,
            inject_faults=args.inject_faults,
        )
    except (KeyboardInterrupt, _Terminated) as e:
        why = "Ctrl-C" if isinstance(e, KeyboardInterrupt) else "SIGTERM"
        if not args.quiet:
            print(f"python -m lpk worker: stopped on {why}", file=sys.stderr)
        return 0
    except (ValueError, TypeError, lpk.LpkError) as e:
        return _fail(str(e))
    if not args.quiet:
        print(
            "worker {name}: idle for {idle:.1f} s, exiting: {tasks} tasks ({taken_over} taken "
            "over, {duplicates} ran twice), {round_trips} Redis round trips".format(
                idle=args.idle, **report
            ),
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
