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

// Gallery (broken, Go): kubernetes/sample-controller itself (controller.go's syncHandler at
// tag kubernetes-1.26.15, unchanged but for the logging). A Foo names its Deployment
// (spec.deploymentName); syncHandler gets the Deployment of the Foo's *current* name and
// creates it if missing, and never deletes the one it made under an earlier name: after
// spec.deploymentName changes, two Deployments run for one Foo (the old one owned by the
// Foo, so it lives until the Foo is deleted), and status.availableReplicas counts only the
// new one. Reported upstream as kubernetes/sample-controller#75 ("Changing deploymentName
// creates a new deployment", closed unfixed); `chaoskube test-operator` found it in the
// upstream binary with no hint (docs/operators.md, "The Go sample-controller"). The class
// Acto reports as a state transition of the custom resource the operator does not handle
// (Gu et al., SOSP 2023: a changed field's old children left behind). Fixed:
// rename_leaves_deployment_fixed/main.go.
package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"gallery/foocontroller"
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

	// Get the deployment with the name specified in Foo.spec; create it if missing.
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
	// The bug: a Deployment this Foo made under an earlier spec.deploymentName is never
	// looked at again.
	if err = c.UpdateFooStatus(foo, deployment); err != nil {
		return err
	}
	c.Recorder.Event(foo, corev1.EventTypeNormal, foocontroller.SuccessSynced, foocontroller.MessageResourceSynced)
	return nil
}

func main() {
	foocontroller.Main(syncHandler)
}
