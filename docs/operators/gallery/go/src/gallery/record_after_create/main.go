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

// Gallery (broken, Go): two writes that must go together, with nothing to tie them when
// the second one never happens. kubernetes/sample-controller's pattern, but each Foo's
// Deployment gets a generated name (metadata.generateName "<deploymentName>-", as a
// controller does that makes a new child per revision) and the controller records that
// name in an annotation of the Foo, and finds its Deployment by the annotation alone. If
// it crashes between the create and the record, or the create commits and its answer is
// lost (the worker's error requeues the key 5 ms later), the next sync sees no record and
// creates a second Deployment: two run for one Foo, one of them never scaled again. The
// class Sieve reports as intermediate-state bugs (Sun et al., OSDI 2022, §4.1; "atomicity
// violation" in its first bug list: sieve-project/sieve bugs.md, e.g. datastax
// cass-operator K8SSAND-1023, Orange-OpenSource/casskop#370, rabbitmq/cluster-operator#782).
// After a rename (spec.deploymentName changed), a new Deployment is made under the new name
// and recorded, and the one recorded before is deleted, as the fixed version does.
// Fixed: record_after_create_fixed/main.go.
package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"gallery/foocontroller"
)

// Annotation on a Foo: the name of its Deployment.
const Annotation = "gallery.chaoskube.dev/deployment"

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
	if foo.Spec.DeploymentName == "" {
		utilruntime.HandleError(fmt.Errorf("%s: deployment name must be specified", key))
		return nil
	}

	var deployment, replaced *appsv1.Deployment
	if recorded := foo.Annotations[Annotation]; recorded != "" {
		// The informer may not have the Deployment yet: try again shortly.
		if deployment, err = c.DeploymentsLister.Deployments(foo.Namespace).Get(recorded); err != nil {
			return err
		}
	}
	if deployment == nil || deployment.GenerateName != foo.Spec.DeploymentName+"-" {
		// The bug: no record (or the record of a Deployment of the old name) means no
		// Deployment, though a create whose record was never written (a crash, a lost
		// answer) made one.
		replaced = deployment
		fresh := foocontroller.NewDeployment(foo)
		fresh.Name, fresh.GenerateName = "", foo.Spec.DeploymentName+"-"
		if deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Create(context.TODO(), fresh, metav1.CreateOptions{}); err != nil {
			return err
		}
		fooCopy := foo.DeepCopy()
		if fooCopy.Annotations == nil {
			fooCopy.Annotations = map[string]string{}
		}
		fooCopy.Annotations[Annotation] = deployment.Name
		if foo, err = c.SampleClient.SamplecontrollerV1alpha1().Foos(foo.Namespace).Update(context.TODO(), fooCopy, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if !metav1.IsControlledBy(deployment, foo) {
		msg := fmt.Sprintf(foocontroller.MessageResourceExists, deployment.Name)
		c.Recorder.Event(foo, corev1.EventTypeWarning, foocontroller.ErrResourceExists, msg)
		return fmt.Errorf("%s", msg)
	}
	if foo.Spec.Replicas != nil && *foo.Spec.Replicas != *deployment.Spec.Replicas {
		scaled := deployment.DeepCopy()
		scaled.Spec.Replicas = foo.Spec.Replicas
		if deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Update(context.TODO(), scaled, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if replaced != nil && metav1.IsControlledBy(replaced, foo) {
		uid := replaced.UID
		err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Delete(context.TODO(), replaced.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !errors.IsNotFound(err) {
			return err
		}
	}
	if err = c.UpdateFooStatus(foo, deployment); err != nil {
		return err
	}
	c.Recorder.Event(foo, corev1.EventTypeNormal, foocontroller.SuccessSynced, foocontroller.MessageResourceSynced)
	return nil
}

func main() {
	foocontroller.Main(syncHandler)
}
