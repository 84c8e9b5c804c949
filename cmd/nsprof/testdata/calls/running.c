/* A host program of the --calls fixture whose thread is still calling
 * fix_run when the process exits: main returns after 200 ms, so the
 * thread's last calls are never written, only counted as lost. */
#include <pthread.h>
#include <unistd.h>

void fix_run(unsigned long nf);

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		fix_run(1000);
	return 0;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, 0, worker, 0);
	usleep(200000);
	return 0;
}
