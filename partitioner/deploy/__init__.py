"""Cluster-scale plans: tensor-parallel groups inside nodes and several pipelines (replicas).

`groups` (one pipeline over disjoint TP groups, exact above the solvers), `replicas` (disjoint
pipelines maximising the sum of their serving tokens/s), `deployment` (the `Deployment`
container of weighted plans), `layout` (scoring a given multi-replica layout).
"""

from __future__ import annotations
