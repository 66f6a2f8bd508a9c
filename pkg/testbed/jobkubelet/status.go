package jobkubelet

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// running is the status of a started pod: Running, its init containers
// not done yet.
func running(p *corev1.Pod, st *corev1.PodStatus, start metav1.Time) {
	st.Phase, st.StartTime = corev1.PodRunning, &start
	st.HostIP, st.PodIP = "10.255.0.1", "10.255.0.1" // nothing dials it
	setCondition(st, corev1.PodInitialized, corev1.ConditionFalse, start)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, start)
	st.InitContainerStatuses = waiting(p.Spec.InitContainers, "PodInitializing")
	st.ContainerStatuses = waiting(p.Spec.Containers, "PodInitializing")
}

// failedToStart is a pod whose volumes could not be set up: with
// restartPolicy Never the kubelet reports it Failed.
func failedToStart(p *corev1.Pod, st *corev1.PodStatus, start metav1.Time, reason, msg string) {
	st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, msg
	st.InitContainerStatuses = waiting(p.Spec.InitContainers, reason)
	st.ContainerStatuses = waiting(p.Spec.Containers, reason)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, start)
}

// finished is a pod whose containers all ended: Succeeded when every one
// exited 0, Failed otherwise; a container that never ran because an init
// container failed stays Waiting, as in a kubelet's report.
func finished(p *corev1.Pod, st *corev1.PodStatus, start, end metav1.Time, inits, mains []corev1.ContainerStatus) {
	st.Phase = corev1.PodSucceeded
	if len(inits) < len(p.Spec.InitContainers) || !allZero(inits) || len(mains) < len(p.Spec.Containers) || !allZero(mains) {
		st.Phase = corev1.PodFailed
	}
	st.InitContainerStatuses = append(inits, waiting(p.Spec.InitContainers[len(inits):], "PodInitializing")...)
	if mains == nil {
		mains = waiting(p.Spec.Containers, "PodInitializing")
	}
	st.ContainerStatuses = mains
	setCondition(st, corev1.PodInitialized, boolCondition(allZero(inits) && len(inits) == len(p.Spec.InitContainers)), end)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, end)
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, end)
}

func boolCondition(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func waiting(cs []corev1.Container, reason string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range cs {
		out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}})
	}
	return out
}

// terminated is a container's status after its process exited with code.
func terminated(c corev1.Container, podUID string, code int32, message string, start, end metav1.Time) corev1.ContainerStatus {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: "jobkubelet://" + c.Image,
		ContainerID: "jobkubelet://" + podUID + "/" + c.Name, Started: new(bool),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: message, StartedAt: start, FinishedAt: end,
			ContainerID: "jobkubelet://" + podUID + "/" + c.Name,
		}},
	}
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, now
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}
