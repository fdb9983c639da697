"""Campaigns on a Ray cluster (``memo fuzz --cluster ADDRESS``).

The head (the ``memo fuzz`` process) keeps generation, search, coverage and the SQLite store; each node runs
one actor (:class:`memo.cluster.node.NodeRunner`) owning that node's warm worker sets, and the head's
:class:`memo.cluster.executor.ClusterExecutor` sends it artifacts as bytes and gets verdict-ready results and
output files back. Ray is imported only here, and only with ``--cluster``: the local path never starts it.
"""

CLUSTER_LOST = "cluster lost"  # how a campaign's stop reason starts when no node was left
EXIT_CLUSTER = 4  # memo fuzz's exit status then (the campaign is stored; --resume continues it)
