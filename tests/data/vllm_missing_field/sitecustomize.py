"""Test-only: vLLM's FinishedRequestStats without ``decode_time``, as a later vLLM might ship it.

tests/test_doctor.py puts this folder first on PYTHONPATH of a `vllm-ledger doctor` process;
Python imports ``sitecustomize`` at start-up, so that process sees this patched copy of the
real class (every other field as vLLM declares it) in place of vLLM's own.
"""

import dataclasses

import vllm.v1.metrics.stats as stats

_real = stats.FinishedRequestStats
_spec: list = []
for _f in dataclasses.fields(_real):
    if _f.name == "decode_time":
        continue
    if _f.default is not dataclasses.MISSING:
        _spec.append((_f.name, _f.type, dataclasses.field(default=_f.default)))
    elif _f.default_factory is not dataclasses.MISSING:
        _spec.append((_f.name, _f.type, dataclasses.field(default_factory=_f.default_factory)))
    else:
        _spec.append((_f.name, _f.type))
_patched = dataclasses.make_dataclass("FinishedRequestStats", _spec)
_patched.__module__ = _real.__module__
stats.FinishedRequestStats = _patched
