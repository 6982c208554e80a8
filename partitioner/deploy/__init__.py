"""Cluster-scale plans: tensor-parallel groups inside nodes and several pipelines (replicas).

`groups` (one pipeline over disjoint TP groups, exact above the solvers), `replicas` (disjoint
pipelines maximising the sum of their serving tokens/s: the exact recursion over node-kind count
vectors; `kinds` the node kinds, `replica_result` its result and the placing of each replica,
`greedy` the search beyond the recursion and columns), `columns` (the same beyond its states:
column generation with a proven LP bound; `pricing` its master LP, `closing` the integer step),
`bounds` (a replica's tokens/s bounded without solving it; `bound_inputs` its inputs and the
workload and serve bounds), `split` (several replicas inside one machine), `serve` (each
replica's own batch and in-flight count), `deployment` (the `Deployment` container of weighted
plans), `layout` (scoring a given multi-replica layout).
"""

from __future__ import annotations
