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

// Gallery (fixed, Go): record_after_create/main.go with the Deployment found by what ties
// it to the Foo, its controller ownerReference (the Foo's uid), and not by the record,
// which is kept for people only. Before creating, the lister is asked, and then -- since
// the lister may not hold the controller's own create yet (its answer was lost
// milliseconds ago) -- the API server itself, with a list (a quorum read). A
// crash between the create and the record, or a lost answer, then finds the Deployment
// made and adopts it. (The ReplicaSet controller closes the same window with
// "expectations": kubernetes pkg/controller/controller_utils.go, ControllerExpectations.)
// Level-triggered as to the name: the Deployment the Foo wants is one it controls whose
// generateName is the current spec.deploymentName and "-"; after a rename a new one is
// made and every other Deployment the Foo controls is deleted (uid precondition, NotFound
// taken as done), as rename_leaves_deployment_fixed does, so a rename seen late or not at
// all (a relist after a broken watch) ends the same way.
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

// Annotation on a Foo: the name of its Deployment (for people; not relied on).
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

	deployment, err := owned(c, foo)
	if err != nil {
		return err
	}
	if deployment == nil {
		fresh := foocontroller.NewDeployment(foo)
		fresh.Name, fresh.GenerateName = "", foo.Spec.DeploymentName+"-"
		if deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Create(context.TODO(), fresh, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if foo.Annotations[Annotation] != deployment.Name {
		fooCopy := foo.DeepCopy()
		if fooCopy.Annotations == nil {
			fooCopy.Annotations = map[string]string{}
		}
		fooCopy.Annotations[Annotation] = deployment.Name
		if foo, err = c.SampleClient.SamplecontrollerV1alpha1().Foos(foo.Namespace).Update(context.TODO(), fooCopy, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if foo.Spec.Replicas != nil && *foo.Spec.Replicas != *deployment.Spec.Replicas {
		scaled := deployment.DeepCopy()
		scaled.Spec.Replicas = foo.Spec.Replicas
		if deployment, err = c.KubeClient.AppsV1().Deployments(foo.Namespace).Update(context.TODO(), scaled, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if err = deleteOthers(c, foo, deployment); err != nil {
		return err
	}
	if err = c.UpdateFooStatus(foo, deployment); err != nil {
		return err
	}
	c.Recorder.Event(foo, corev1.EventTypeNormal, foocontroller.SuccessSynced, foocontroller.MessageResourceSynced)
	return nil
}

// owned is the Deployment the Foo controls under its current deploymentName (the oldest,
// if several), from the lister, else from the API server; nil if there is none.
func owned(c *foocontroller.Controller, foo *samplev1alpha1.Foo) (*appsv1.Deployment, error) {
	// The Deployment carries no labels of its own (sample-controller's newDeployment sets
	// them on its selector and Pod template only): every Deployment of the namespace is
	// looked at, and its controller ownerReference decides.
	cached, err := c.DeploymentsLister.Deployments(foo.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	if found := oldestControlled(cached, foo); found != nil {
		return found, nil
	}
	live, err := c.KubeClient.AppsV1().Deployments(foo.Namespace).List(context.TODO(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := make([]*appsv1.Deployment, 0, len(live.Items))
	for i := range live.Items {
		items = append(items, &live.Items[i])
	}
	return oldestControlled(items, foo), nil
}

func oldestControlled(deployments []*appsv1.Deployment, foo *samplev1alpha1.Foo) *appsv1.Deployment {
	var mine []*appsv1.Deployment
	for _, d := range deployments {
		if d.DeletionTimestamp == nil && d.GenerateName == foo.Spec.DeploymentName+"-" && metav1.IsControlledBy(d, foo) {
			mine = append(mine, d)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	sort.Slice(mine, func(i, j int) bool {
		if !mine[i].CreationTimestamp.Equal(&mine[j].CreationTimestamp) {
			return mine[i].CreationTimestamp.Before(&mine[j].CreationTimestamp)
		}
		return mine[i].Name < mine[j].Name
	})
	return mine[0]
}

// deleteOthers deletes every Deployment of the Foo's namespace that the Foo controls other
// than keep (a name the Foo had before, a second one made by a race), in name order.
func deleteOthers(c *foocontroller.Controller, foo *samplev1alpha1.Foo, keep *appsv1.Deployment) error {
	all, err := c.DeploymentsLister.Deployments(foo.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var others []*appsv1.Deployment
	for _, d := range all {
		if d.UID != keep.UID && d.DeletionTimestamp == nil && metav1.IsControlledBy(d, foo) {
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
