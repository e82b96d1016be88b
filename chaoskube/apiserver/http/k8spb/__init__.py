"""Kubernetes' protobuf message classes, generated from upstream's generated.proto files
(k8s.io/api, apimachinery, apiextensions-apiserver v0.32.9) by tools/k8s_protobuf.py: do
not edit; regenerate."""
