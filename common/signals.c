/*
 * signals.c — blocked signals read through a signalfd (see signals.h).
 */
#include "signals.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int wt_signals_open(wt_signals *s, const int *sigs, size_t n, wt_err *err)
{
	sigset_t set;
	int rc = 0;

	s->fd = -1;
	sigemptyset(&set);
	for (size_t i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if ((errno = pthread_sigmask(SIG_BLOCK, &set, NULL))) {
		rc = wt_err_set(err, WT_EIO, "cannot block signals: %s", strerror(errno));
		goto out;
	}
	if ((s->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		rc = wt_err_set(err, WT_EIO, "signalfd: %s", strerror(errno));
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
out:
	return rc;
}

int wt_signals_wait(wt_signals *s, int timeout_ms)
{
	struct signalfd_siginfo si;
	struct pollfd p = {.fd = s->fd, .events = POLLIN};
	int sig = 0;

	for (;;) {
		ssize_t got = read(s->fd, &si, sizeof(si));
		int r;

		if (got == (ssize_t)sizeof(si)) {
			sig = (int)si.ssi_signo;
			break;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if ((got < 0 && errno != EAGAIN) || got >= 0 || !timeout_ms)
			break;
		r = poll(&p, 1, timeout_ms);
		if (r == 0 || (r < 0 && errno != EINTR))
			break;
		if (timeout_ms > 0)
			timeout_ms = 0; /* waited once: from now on only what is pending */
	}
	return sig;
}

void wt_signals_close(wt_signals *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
