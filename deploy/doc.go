// Package deploy holds no code: it is the deployment files (the image, the
// compose file, the Kubernetes manifests and the KEDA autoscaling overlay),
// and its tests decode every one of them strictly, so a manifest that a
// cluster or compose would reject (or silently prune) fails here first.
// It is a module of its own (go.mod), so that what the tests decode with
// (compose-go, the Kubernetes API types) stays out of the runtime module;
// `make test` runs it.
package deploy
