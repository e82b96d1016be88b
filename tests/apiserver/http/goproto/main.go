// A client-go (v0.26) program set to protobuf, as Kubernetes' own components and typed
// controller-runtime clients are: create, get, update (and a stale update's 409), list,
// watch, delete of a ConfigMap; a Deployment and its scale subresource; a list of every pod
// and node the cluster holds (objects with statuses). It prints one JSON report; every
// request's and answer's Content-Type is counted by a wrapping round tripper.
// Built by tests/apiserver/http/test_protobuf_clients.py in GOPATH mode beside the
// sample-controller's sources.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

type counting struct {
	next  http.RoundTripper
	mu    sync.Mutex
	types map[string]int
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Body != nil {
		c.types["request "+req.Header.Get("Content-Type")]++
	}
	if err == nil {
		c.types["answer "+resp.Header.Get("Content-Type")]++
	}
	return resp, err
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	must(err, "kubeconfig")
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	counter := &counting{types: map[string]int{}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	client, err := kubernetes.NewForConfig(cfg)
	must(err, "client")
	ctx := context.Background()
	ns := "goproto"
	report := map[string]interface{}{}

	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err, "create namespace")
	configMaps := client.CoreV1().ConfigMaps(ns)
	created, err := configMaps.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{"app": "goproto"}},
		Data:       map[string]string{"mode": "fast"},
		BinaryData: map[string][]byte{"blob": {0, 255, 7}},
	}, metav1.CreateOptions{})
	must(err, "create configmap")
	report["created_uid"] = string(created.UID)
	report["created_at"] = created.CreationTimestamp.UTC().Format(time.RFC3339)
	list, err := configMaps.List(ctx, metav1.ListOptions{LabelSelector: "app=goproto"})
	must(err, "list configmaps")
	report["listed"] = len(list.Items)
	watcher, err := configMaps.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	must(err, "watch configmaps")
	stale := created.DeepCopy()
	created.Data["mode"] = "slow"
	updated, err := configMaps.Update(ctx, created, metav1.UpdateOptions{})
	must(err, "update configmap")
	report["updated_mode"] = updated.Data["mode"]
	stale.Data["mode"] = "stale"
	_, err = configMaps.Update(ctx, stale, metav1.UpdateOptions{})
	report["stale_update_conflict"] = apierrors.IsConflict(err)
	select {
	case event := <-watcher.ResultChan():
		cm, ok := event.Object.(*corev1.ConfigMap)
		report["watch_event"] = string(event.Type)
		if ok {
			report["watch_mode"] = cm.Data["mode"]
			report["watch_blob"] = cm.BinaryData["blob"]
		}
	case <-time.After(30 * time.Second):
		report["watch_event"] = "timeout"
	}
	watcher.Stop()
	grace := int64(0)
	must(configMaps.Delete(ctx, "settings", metav1.DeleteOptions{GracePeriodSeconds: &grace}), "delete configmap")
	_, err = configMaps.Get(ctx, "settings", metav1.GetOptions{})
	report["get_after_delete_not_found"] = apierrors.IsNotFound(err)

	replicas := int32(1)
	labels := map[string]string{"app": "goproto"}
	deployment, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	must(err, "create deployment")
	report["deployment_strategy"] = string(deployment.Spec.Strategy.Type)
	report["deployment_max_surge"] = deployment.Spec.Strategy.RollingUpdate.MaxSurge.String()
	var scaled *autoscalingv1.Scale
	conflicts := 0
	// the deployment controller writes the status meanwhile: a stale Scale is 409, read again
	must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 3
		scaled, err = client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			conflicts++
		}
		return err
	}), "update scale")
	report["scale_conflicts"] = conflicts
	report["scaled_replicas"] = scaled.Spec.Replicas

	// every pod of the cluster, until the deployment's are running (statuses, times, IPs)
	var pods *corev1.PodList
	running := 0
	for deadline := time.Now().Add(90 * time.Second); running == 0 && time.Now().Before(deadline); time.Sleep(time.Second) {
		pods, err = client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		must(err, "list pods")
		for _, pod := range pods.Items {
			if pod.Namespace == ns && pod.Status.Phase == corev1.PodRunning && pod.Status.StartTime != nil && pod.Status.PodIP != "" {
				running++
			}
		}
	}
	report["pods"] = len(pods.Items)
	report["running_pods"] = running
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	must(err, "list nodes")
	ready := 0
	for _, node := range nodes.Items {
		for _, condition := range node.Status.Conditions {
			if condition.Type == corev1.NodeReady && condition.Status == corev1.ConditionTrue && !condition.LastHeartbeatTime.IsZero() {
				ready++
			}
		}
		report["node_cpu"] = node.Status.Capacity.Cpu().String()
	}
	report["ready_nodes"] = ready
	counter.mu.Lock()
	report["content_types"] = counter.types
	counter.mu.Unlock()
	must(json.NewEncoder(os.Stdout).Encode(report), "report")
}
