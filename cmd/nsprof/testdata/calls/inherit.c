/* A host program of the fixture whose calls are made by tasks it creates
 * after it starts: its main thread calls fix_run(10), then 3 threads call
 * fix_run(100), fix_run(200) and fix_run(300) at once, then a forked child
 * calls fix_run(1000) on its main thread and fix_run(5) on a thread of its
 * own. fix_f is called 1615 times, fix_run 6 times. It exits 1 when a
 * thread or the child cannot be created or the child fails. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void fix_run(unsigned long nf);

static void *worker(void *arg)
{
	fix_run((unsigned long)arg);
	return 0;
}

/* spawn runs fix_run(n[i]) on a thread each and waits for them. */
static int spawn(const unsigned long *n, int count)
{
	pthread_t t[3];
	for (int i = 0; i < count; i++) {
		int e = pthread_create(&t[i], 0, worker, (void *)n[i]);
		if (e != 0) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	for (int i = 0; i < count; i++)
		pthread_join(t[i], 0);
	return 0;
}

int main(void)
{
	static const unsigned long threads[] = {100, 200, 300}, child[] = {5};
	fix_run(10);
	if (spawn(threads, 3) != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		fix_run(1000);
		_exit(spawn(child, 1));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child failed: status %#x\n", status);
		return 1;
	}
	return 0;
}
