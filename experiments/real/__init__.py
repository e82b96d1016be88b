"""Real mode, in one place: the same experiments, faults and checkers on real processes.

- ``cluster.py``: a real etcd cluster of Debian's ``etcd`` binary on loopback, every peer
  link through the Toxiproxy-compatible server, and the real effects of fault plans on it
  (SIGKILL, SIGSTOP, toxics);
- ``etcd.py``: the ``real-etcd`` system — its options, the workload over etcd's JSON gateway
  (recorded as the simulated client records), the leader poller and the checkers;
- ``runner.py``: the run — the shared phase driver on the real clock, then the comparison
  with the simulated twin.
"""
