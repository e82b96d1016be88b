/*
Copyright 2017 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Gallery (fixed, Go): rename_leaves_deployment/main.go (kubernetes/sample-controller's
// syncHandler, kubernetes/sample-controller#75) with the Deployments the Foo controls
// reconciled as a set: after the one of the current spec.deploymentName is synced, every
// other Deployment whose controller ownerReference is this Foo (by uid) is deleted, with a
// uid precondition (a Deployment of that name made since is not touched) and NotFound
// taken as done (a delete retried after a lost answer). Level-triggered: it looks at the
// Deployments as they are, not at which name the Foo had before, so a rename seen late, or
// not at all (a relist after a broken watch, a restart), is handled the same way.
package main

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"gallery/foocontroller"
	samplev1alpha1 "k8s.io/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

func syncHandler(c *foocontroller.Controller, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("invalid resource key: %s", key))
		return nil
	}
	foo, err := c.FoosLister.Foos(namespace).Get(name)
	if err != nil {
		if errors.IsNotFound(err) {
			utilruntime.HandleError(fmt.Errorf("foo '%s' in work queue no longer exists", key))
			return nil
		}
		return err
	}
	deploymentName := foo.Spec.DeploymentName
	if deploymentName == "" {
		utilruntime.HandleError(fmt.Errorf("%s: deployment name must be specified", key))
		return nil
	}

	deployment, err := c.DeploymentsLister.Deployments(foo.Namespace).Get(deploymentName)
	if errors.IsNotFound(err) {
		deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Create(context.TODO(), foocontroller.NewDeployment(foo), metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(deployment, foo) {
		msg := fmt.Sprintf(foocontroller.MessageResourceExists, deployment.Name)
		c.Recorder.Event(foo, corev1.EventTypeWarning, foocontroller.ErrResourceExists, msg)
		return fmt.Errorf("%s", msg)
	}
	if foo.Spec.Replicas != nil && *foo.Spec.Replicas != *deployment.Spec.Replicas {
		deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Update(context.TODO(), foocontroller.NewDeployment(foo), metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	// The fix: the Deployments this Foo controls other than the current one go.
	if err = deleteOthers(c, foo, deploymentName); err != nil {
		return err
	}
	if err = c.UpdateFooStatus(foo, deployment); err != nil {
		return err
	}
	c.Recorder.Event(foo, corev1.EventTypeNormal, foocontroller.SuccessSynced, foocontroller.MessageResourceSynced)
	return nil
}

// deleteOthers deletes every Deployment of the Foo's namespace that the Foo controls and
// that is not named keep, in name order.
func deleteOthers(c *foocontroller.Controller, foo *samplev1alpha1.Foo, keep string) error {
	all, err := c.DeploymentsLister.Deployments(foo.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var others []*appsv1.Deployment
	for _, d := range all {
		if d.Name != keep && d.DeletionTimestamp == nil && metav1.IsControlledBy(d, foo) {
			others = append(others, d)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	for _, d := range others {
		uid := d.UID
		err := c.KubeClient.AppsV1().Deployments(foo.Namespace).Delete(context.TODO(), d.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !errors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func main() {
	foocontroller.Main(syncHandler)
}
