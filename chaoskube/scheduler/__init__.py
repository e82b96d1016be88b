"""kube-scheduler for the simulated control plane."""
