// busy burns CPU in a fixed call chain (main -> burn -> spin) in its main
// thread and in a second thread, and in a child it forks. Usage:
//
//   busy SECONDS [wait]
//
// With "wait", it reads one byte from stdin before forking, so a test can
// attach to the running process first. The perf package tests build it
// with gcc into a temporary directory.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

volatile unsigned long sink;

__attribute__((noinline)) static void spin(void) {
	for (int i = 0; i < 100000; i++)
		sink += i;
}

__attribute__((noinline)) static void burn(double secs) {
	double end = now() + secs;
	while (now() < end)
		spin();
}

static void *thread_main(void *arg) {
	burn(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	pthread_t t;
	pthread_create(&t, NULL, thread_main, &secs);
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		char c;
		if (read(0, &c, 1) != 1)
			return 2;
	}
	pid_t child = fork();
	if (child == 0) {
		burn(secs / 2);
		_exit(0);
	}
	burn(secs);
	waitpid(child, NULL, 0);
	pthread_join(t, NULL);
	return 0;
}
