package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// A kubelet forwards `kubectl port-forward` into the pod's network namespace.
// Here the pod's processes listen on their own loopback ports, so the agent
// tells kwok's kubelet server (e2e/framework StartKwok) where each container
// port of the pod leads, with one kwok PortForward object per pod named as the
// pod. The API server's pods/portforward subresource then works as against a
// real node: it streams to kwok, which dials the simulated mysqld or the
// sidecar.

const portForwardPath = "/apis/kwok.x-k8s.io/v1alpha1/namespaces/%s/portforwards"

type portForward struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]string `json:"metadata"`
	Spec       portForwardSpec   `json:"spec"`
}

type portForwardSpec struct {
	Forwards []forward `json:"forwards"`
}

type forward struct {
	Ports  []int         `json:"ports"`
	Target forwardTarget `json:"target"`
}

type forwardTarget struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
}

// declarePortForward creates or replaces the pod's PortForward: the MySQL
// port to the site's simulated mysqld, the sidecar port to its sidecar.
func (a *NodeAgent) declarePortForward(ctx context.Context, s *siteRuntime, pod *corev1.Pod) error {
	var fwds []forward
	for _, m := range []struct {
		port int
		addr string
	}{{siteaddr.MySQLPort, s.plan.MySQLAddr}, {protocol.SidecarPort, s.plan.SidecarAddr}} {
		host, p, err := net.SplitHostPort(m.addr)
		if err != nil {
			return fmt.Errorf("port-forward of pod %s: %w", pod.Name, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("port-forward of pod %s: %w", pod.Name, err)
		}
		fwds = append(fwds, forward{Ports: []int{m.port}, Target: forwardTarget{Address: host, Port: port}})
	}
	obj := portForward{APIVersion: "kwok.x-k8s.io/v1alpha1", Kind: "PortForward",
		Metadata: map[string]string{"name": pod.Name, "namespace": pod.Namespace}, Spec: portForwardSpec{Forwards: fwds}}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	rc := a.kube.Discovery().RESTClient()
	base := fmt.Sprintf(portForwardPath, pod.Namespace)
	// The object outlives pods of the same name (a StatefulSet reuses them):
	// replace it so it always names this pod's processes.
	err = rc.Delete().AbsPath(base, pod.Name).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("port-forward of pod %s: delete the old one: %w", pod.Name, err)
	}
	if err := rc.Post().AbsPath(base).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error(); err != nil {
		return fmt.Errorf("port-forward of pod %s: %w", pod.Name, err)
	}
	return nil
}
