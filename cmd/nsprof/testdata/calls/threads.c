/* A host program of the fixture that creates a thread and a child
 * process while it is probed: it exits 1 when pthread_create or fork
 * fails, else after its main thread called fix_run(10). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void fix_run(unsigned long nf);

static void *worker(void *arg)
{
	(void)arg;
	fix_run(100);
	return 0;
}

int main(void)
{
	pthread_t t;
	int e = pthread_create(&t, 0, worker, 0);
	if (e != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		return 1;
	}
	pthread_join(t, 0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		_exit(0);
	waitpid(pid, 0, 0);
	fix_run(10);
	return 0;
}
