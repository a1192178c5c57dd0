/*
 * pool.c — worker threads with one FIFO queue (see pool.h).
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job {
	void (*fn)(void *);
	void *arg;
	struct job *next;
} job;

struct edge_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	job *head, *tail;
	size_t queued;
	int stopping;
	int n;
	pthread_t *th;
};

static void *worker_main(void *arg)
{
	edge_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		job *j = p->head;
		if (!j)
			break;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		pthread_mutex_unlock(&p->mu);
		j->fn(j->arg);
		free(j);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

edge_pool *edge_pool_new(int n)
{
	edge_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->th = calloc((size_t)n, sizeof(*p->th));
	if (!p->th) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&p->th[i], NULL, worker_main, p) != 0)
			break;
		p->n++;
	}
	if (p->n == 0) {
		edge_pool_free(p);
		return NULL;
	}
	return p;
}

int edge_pool_submit(edge_pool *p, void (*fn)(void *), void *arg, size_t max_queued)
{
	job *j = malloc(sizeof(*j));
	if (!j)
		return -1;
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->stopping || (max_queued && p->queued >= max_queued)) {
		pthread_mutex_unlock(&p->mu);
		free(j);
		return -1;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void edge_pool_free(edge_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->th);
	free(p);
}
