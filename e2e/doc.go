// Package e2e holds end-to-end tests that run the nsprof binary as a user
// would: record real processes (in containers among others), then report
// on the capture after the processes and their containers are gone.
//
// The tests need root, perf events and the container tools installed by
// scripts/install-deps.sh; in CI (CI=true) a missing one is a failure.
package e2e
