"""The real Dynamo frontend with its RL listener: ``python -m prime_rl_dynamo.suite.harness.frontend``.

Runs the installed Dynamo release's HTTP frontend (dynamic engine) on loopback; the RL listener comes from
``DYN_ENABLE_RL=true`` and ``DYN_RL_PORT`` in the environment the harness passes in.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import traceback

from prime_rl_dynamo.suite.harness._process import die_with_parent


async def _main(http_host: str, http_port: int) -> None:
    from dynamo.llm import EngineType, EntrypointArgs, make_engine, run_input
    from dynamo.runtime import DistributedRuntime

    loop = asyncio.get_running_loop()
    try:
        runtime = DistributedRuntime(
            loop,
            os.environ.get("DYN_DISCOVERY_BACKEND", "file"),
            os.environ.get("DYN_REQUEST_PLANE", "tcp"),
        )
    except Exception as exc:  # the runtime's own refusal (e.g. request plane "http")
        raise SystemExit(f"the Dynamo runtime refused this configuration: {exc}") from None
    args = EntrypointArgs(EngineType.Dynamic, http_host=http_host, http_port=http_port)
    engine = await make_engine(runtime, args)
    await run_input(runtime, "http", engine)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the frontend process."""
    parser = argparse.ArgumentParser(
        prog="python -m prime_rl_dynamo.suite.harness.frontend", allow_abbrev=False
    )
    parser.add_argument("--http-host", default="127.0.0.1")
    parser.add_argument("--http-port", type=int, required=True)
    args = parser.parse_args(argv)
    die_with_parent()
    import uvloop

    try:
        uvloop.run(_main(args.http_host, args.http_port))
    except SystemExit as exc:
        print(f"frontend: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)  # Dynamo's runtime threads could keep the interpreter alive
    return 0


if __name__ == "__main__":
    sys.exit(main())
