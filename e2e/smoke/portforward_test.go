package smoke

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// TestPortForwardThroughKwok proves that pods/portforward works on the test
// bed's kwok nodes as on a kubelet's: the API server streams to kwok's kubelet
// server, which dials where the pod's PortForward object says. The kubectl
// plugin's gtid-audit and any user's `kubectl port-forward` in the playground
// depend on it.
func TestPortForwardThroughKwok(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cp.StartKwok(ctx); err != nil {
		t.Fatalf("start kwok: %v", err)
	}
	kube := cp.Client()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-smoke", Annotations: map[string]string{framework.KwokNodeAnnotation: "fake"}}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	// kwok initializes the node: its kubelet endpoint is kwok's server.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port != 0, nil
	})
	if err != nil {
		t.Fatalf("kwok never set the node's kubelet endpoint: %v", err)
	}

	ns := cp.NewNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "echo", Image: "none",
			Ports: []corev1.ContainerPort{{ContainerPort: 3306}}}}},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	echoAddr := startEcho(t)
	_, port, _ := net.SplitHostPort(echoAddr)
	target, _ := strconv.Atoi(port)
	declare := map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
		"metadata": map[string]any{"name": "echo", "namespace": ns},
		"spec":     map[string]any{"forwards": []any{map[string]any{"ports": []int{3306}, "target": map[string]any{"address": "127.0.0.1", "port": target}}}},
	}
	body, _ := json.Marshal(declare)
	err = kube.Discovery().RESTClient().Post().AbsPath("/apis/kwok.x-k8s.io/v1alpha1/namespaces", ns, "portforwards").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if err != nil {
		t.Fatalf("create PortForward: %v", err)
	}

	// kwok picks the object up through its informer; retry until it does.
	var reply string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := echoThroughPortForward(ctx, ns, "echo", 3306, "hello through kwok")
		if err != nil {
			t.Logf("port-forward: %v", err)
			return false, nil
		}
		reply = r
		return true, nil
	})
	if err != nil {
		t.Fatalf("no answer through the port-forward: %v", err)
	}
	if reply != "hello through kwok" {
		t.Fatalf("reply = %q, want the echo of what was sent", reply)
	}
}

// echoThroughPortForward forwards a local port to the pod's port as kubectl
// port-forward does (SPDY through pods/portforward) and sends one line.
func echoThroughPortForward(ctx context.Context, ns, pod string, port int, line string) (string, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cp.Config)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/portforward", cp.APIServerURL, ns, pod))
	if err != nil {
		return "", err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return "", err
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(int(ports[0].Local)), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read the echo: %w", err)
	}
	return strings.TrimSuffix(got, "\n"), nil
}

// startEcho serves one-line echoes on a loopback port until the test ends.
func startEcho(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = io.WriteString(c, line)
				}
			}()
		}
	}()
	return l.Addr().String()
}
