"""Calibration from measurements (docs/theory.md §7.2 and §9).

Turns what users measured into the numbers the planner plans with:

- `gateway`: service-time statistics or request logs -> stage times tau, the GPipe bias,
  queueing inflation (§7.2); `gateway_write` turns them into a cluster and a `layers:` profile.
- `overlap`: measured makespans at several M -> slope k, overlap ratio rho (§9) and the
  per-transfer overlap p (Errors 3), with advice on where the throughput headroom is.
- `timings` (the timings CSV), `fit` and `regimes` (cost-model efficiencies fitted per GPU),
  `profile` (a measured `layers:` profile), `cluster_update` (a calibrated cluster.yaml).
- `measure` (optional, needs torch): per-layer forward times of a PyTorch model.

`csvio`, `gateway_io` and `timings` read files at the edge; the rest is pure. Names are imported
lazily so that `import partitioner.calibrate` stays cheap; the torch helpers stay in
`partitioner.calibrate.measure` (an optional extra).
"""

from __future__ import annotations

from partitioner._lazy import lazy_exports

__all__ = [
    "CALIBRATE_MARKER",
    "GatewayStats",
    "GatewayCalibration",
    "aggregate_requests",
    "calibrate_gateway",
    "read_gateway",
    "OverlapFit",
    "MeasuredPoint",
    "fit_overlap",
    "Timing",
    "read_timings",
    "EfficiencyFit",
    "GpuFit",
    "fit_efficiencies",
    "profile_from_timings",
]

#: Written into every file `partition calibrate` writes, so a re-run may replace it while a
#: file the user wrote is never overwritten (`partitioner.cli._output.safe_write`).
CALIBRATE_MARKER = "written by partition calibrate"

_LAZY = {
    "GatewayStats": "partitioner.calibrate.gateway",
    "GatewayCalibration": "partitioner.calibrate.gateway",
    "aggregate_requests": "partitioner.calibrate.gateway",
    "calibrate_gateway": "partitioner.calibrate.gateway",
    "read_gateway": "partitioner.calibrate.gateway_io",
    "OverlapFit": "partitioner.calibrate.overlap",
    "MeasuredPoint": "partitioner.calibrate.overlap",
    "fit_overlap": "partitioner.calibrate.overlap",
    "Timing": "partitioner.calibrate.timings",
    "read_timings": "partitioner.calibrate.timings",
    "EfficiencyFit": "partitioner.calibrate.fit",
    "GpuFit": "partitioner.calibrate.fit",
    "fit_efficiencies": "partitioner.calibrate.fit",
    "profile_from_timings": "partitioner.calibrate.profile",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
