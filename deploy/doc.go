// Package deploy holds no code: it is the deployment files (the image, the
// compose file, the Kubernetes manifests and the KEDA autoscaling overlay),
// and its tests decode every one of them strictly, so a manifest that a
// cluster or compose would reject (or silently prune) fails here first.
package deploy
