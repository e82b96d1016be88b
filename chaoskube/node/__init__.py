"""The node components of the simulated cluster: kubelet (with a simulated container runtime) and kube-proxy."""
