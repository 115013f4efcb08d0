"""The suite's instruments: what the conformance suite measures a trainer or a listing with, never
what a trainer runs.

``reference`` (the reference fleet on real HTTP), ``harness`` (the real Dynamo frontend, stub and
real vLLM engines), ``fleet`` (the ``Fleet`` protocol both implement), ``strategies`` (hypothesis),
``mutations`` (single-requirement breaks of a valid body), ``recording`` (what a fleet's servers
received) and ``specdiff`` (the CLI's ``spec diff``). ``import prime_rl_dynamo`` loads none of them;
each needs the ``reference`` or ``conformance`` extra.
"""
