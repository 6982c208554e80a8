"""Calibration from measurements (issue 6; theory.md §7.2 and §9).

Turns what users measured into the numbers the planner plans with:
`gateway` (service-time statistics -> stage times tau, the GPipe bias, queueing inflation),
`overlap` (measured makespans -> slope k and overlap ratio rho), `timings` and `fit`
(per-layer timings -> fitted cost-model efficiencies, or a measured `layers:` profile),
`measure` (optional, needs torch: per-layer forward times of a PyTorch model).
`csvio` reads the CSVs at the edge; everything else is pure.
"""

from __future__ import annotations

__all__: list[str] = []

#: Written into every file `partition calibrate` writes, so a re-run may replace it while a
#: file the user wrote is never overwritten (`partitioner.cli._output.safe_write`).
CALIBRATE_MARKER = "written by partition calibrate"
