/* The main thread exits with pthread_exit while a second thread keeps
 * running: /proc/PID/root then fails and only /proc/PID/task/TID/root
 * still leads to the root. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *worker(void *arg) {
	(void)arg;
	sleep(600);
	return NULL;
}

int main(void) {
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
