"""The ``client`` profile (black box): a client under test against reference fleets, and the checks.

The set-up (:mod:`conformance.client.profile`) runs what the selected checks need through
conformance/client_runs.py; each check then judges what the fleets recorded: requests, their
order and timing, headers and bodies, plus the client's exit status and its structured result
(conformance/client_call.py). The wording of a client's error never decides a verdict: it is
quoted in a report only as detail.

The checks live by requirement family, each registered next to the code that judges it and
carrying the runs it needs (:mod:`conformance.client.registration`):

- :mod:`conformance.client.readiness`: READY-1 to READY-6;
- :mod:`conformance.client.polling`: POLL-1 to POLL-5, and the listing's form (VERSION-2, BODY-5,
  DIALECT-1);
- :mod:`conformance.client.credentials`: CRED-1 to CRED-4;
- :mod:`conformance.client.ranks`: RANK-1 to RANK-8;
- :mod:`conformance.client.admin`: ADMIN-3, NATIVE-1 and NATIVE-2;
- :mod:`conformance.client.topology`: TOPO-1.

What they share is in :mod:`conformance.client.verdicts`.
"""

from __future__ import annotations

# The families register their checks on import.
from conformance.client import (  # noqa: F401
    admin,
    credentials,
    polling,
    ranks,
    readiness,
    topology,
)
from conformance.client.profile import checks_of_scenario, related_checks
from conformance.client.registration import CLIENT_CHECKS, ClientCheck
from conformance.client.verdicts import Problem
from conformance.client_call import (
    SECRET_ENV,
    ClientCall,
    ClientUnderTest,
    Credentials,
    arguments_from_env,
    load_client,
)
from conformance.client_runs import ClientRun

__all__ = [
    "CLIENT_CHECKS",
    "SECRET_ENV",
    "ClientCall",
    "ClientCheck",
    "ClientRun",
    "ClientUnderTest",
    "Credentials",
    "Problem",
    "arguments_from_env",
    "checks_of_scenario",
    "load_client",
    "related_checks",
]
