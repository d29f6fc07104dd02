"""``python -m localstack up|down|status [--dir .stack] [--only kafka,neo4j]``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from localstack.stack import Stack, StackError, StackSettings
from sparkprov.runtime import configure_logging


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="localstack", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", default=".stack", help="data, logs and jars (default .stack)")
    parser.add_argument(
        "--only", default="", help="comma-separated subset of " + ",".join(Stack.ORDER)
    )
    args = parser.parse_args(argv)
    configure_logging("INFO")
    stack = Stack(StackSettings.from_env(Path(args.dir), os.environ))
    names = tuple(n for n in args.only.split(",") if n) or Stack.ORDER
    try:
        if args.command == "up":
            started = stack.up(names)
            print(f"stack up ({', '.join(started) or 'all already running'} started)")
        elif args.command == "down":
            stopped = stack.down(names)
            print(f"stack down ({', '.join(stopped) or 'nothing was running'})")
        else:
            for name, (pid, healthy) in stack.status().items():
                print(f"{name:7} pid={pid or '-':>8} {'healthy' if healthy else 'DOWN'}")
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
