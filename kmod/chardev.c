// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/hopscope: one recording per open file, one open file at a time,
 * CAP_NET_ADMIN only. read() hands out whole records; poll() says when.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/poll.h>
#include <linux/uaccess.h>
#include "session.h"

static int hs_open(struct inode *inode, struct file *f)
{
	struct hs_session *s;
	int err = 0;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	mutex_lock(&hs_global_lock);
	if (hs_current) {
		err = -EBUSY;
		goto out;
	}
	s = hs_session_new();
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	hs_current = s;
	f->private_data = s;
out:
	mutex_unlock(&hs_global_lock);
	return err ?: nonseekable_open(inode, f);
}

static int hs_release(struct inode *inode, struct file *f)
{
	struct hs_session *s = f->private_data;

	mutex_lock(&hs_global_lock);
	hs_current = NULL;
	mutex_unlock(&hs_global_lock);
	mutex_lock(&s->lock);
	hs_session_stop(s);
	mutex_unlock(&s->lock);
	hs_session_free(s);
	return 0;
}

/*
 * Fill bounce from the ring (after stop: from the slots still in flight, then
 * the merged packets waiting for their segments).
 * Under s->lock only for that: 0 records, or -EINVAL before a recording
 * started. *stopped: the recording is over.
 */
static int hs_read_fill(struct hs_session *s, u32 max, bool *stopped)
{
	enum hs_state state;
	u32 n;

	if (mutex_lock_interruptible(&s->lock))
		return -ERESTARTSYS;
	state = s->state;
	if (state == HS_IDLE || state == HS_CONFIGURED) {
		mutex_unlock(&s->lock);
		return -EINVAL;
	}
	n = hs_ring_pop(&s->ring, s->bounce, max);
	if (!n && state == HS_STOPPED)
		n = hs_slots_drain(s, s->bounce, max) ?: hs_gso_drain(s, s->bounce, max);
	mutex_unlock(&s->lock);
	s->bounce_off = 0;
	s->bounce_n = n;
	*stopped = state == HS_STOPPED;
	return n;
}

static ssize_t hs_read(struct file *f, char __user *buf, size_t count, loff_t *pos)
{
	struct hs_session *s = f->private_data;
	u32 max = min_t(size_t, count / sizeof(struct hs_record), HS_BOUNCE_RECORDS), n;
	size_t bytes, left;
	bool stopped;
	ssize_t ret;
	int got;

	if (!max)
		return -EINVAL;
	if (mutex_lock_interruptible(&s->read_lock))
		return -ERESTARTSYS;
	while (!s->bounce_n) {
		got = hs_read_fill(s, max, &stopped);
		if (got) {
			if (got < 0) {
				ret = got;
				goto out;
			}
			break;
		}
		ret = 0;
		if (stopped)
			goto out;
		ret = -EAGAIN;
		if (f->f_flags & O_NONBLOCK)
			goto out;
		mutex_unlock(&s->read_lock);
		if (wait_event_interruptible(s->wq, hs_ring_len(&s->ring) ||
					     READ_ONCE(s->state) != HS_RUNNING))
			return -ERESTARTSYS;
		if (mutex_lock_interruptible(&s->read_lock))
			return -ERESTARTSYS;
	}
	/* no session lock here: see struct hs_session */
	n = min(max, s->bounce_n);
	bytes = n * sizeof(struct hs_record);
	left = copy_to_user(buf, s->bounce + s->bounce_off, bytes);
	/* whole records only; what did not arrive is handed out next time */
	n = (bytes - left) / sizeof(struct hs_record);
	s->bounce_off += n;
	s->bounce_n -= n;
	ret = n ? (ssize_t)(n * sizeof(struct hs_record)) : -EFAULT;
out:
	mutex_unlock(&s->read_lock);
	return ret;
}

static __poll_t hs_poll(struct file *f, poll_table *wait)
{
	struct hs_session *s = f->private_data;

	poll_wait(f, &s->wq, wait);
	if (hs_ring_len(&s->ring) || READ_ONCE(s->bounce_n) ||
	    READ_ONCE(s->state) == HS_STOPPED)
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static long hs_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct hs_session *s = f->private_data;
	void __user *uarg = (void __user *)arg;
	union {
		struct hs_kmod_config cfg;
		struct hs_kmod_info info;
		struct hs_kmod_counters counters;
		struct hs_kmod_cost cost;
	} *u;
	long err = 0;

	/* over 4 KiB of probe cost: off the stack */
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	switch (cmd) {
	case HS_IOC_INFO:
		mutex_lock(&s->lock);
		hs_session_info(s, &u->info);
		mutex_unlock(&s->lock);
		if (copy_to_user(uarg, &u->info, sizeof(u->info)))
			err = -EFAULT;
		break;
	case HS_IOC_CONFIGURE:
		if (copy_from_user(&u->cfg, uarg, sizeof(u->cfg))) {
			err = -EFAULT;
			break;
		}
		/* records an earlier recording left undelivered are not this one's */
		mutex_lock(&s->read_lock);
		mutex_lock(&s->lock);
		err = hs_session_configure(s, &u->cfg);
		if (!err)
			s->bounce_n = 0;
		mutex_unlock(&s->lock);
		mutex_unlock(&s->read_lock);
		break;
	case HS_IOC_START:
		mutex_lock(&s->lock);
		err = hs_session_start(s);
		mutex_unlock(&s->lock);
		break;
	case HS_IOC_STOP:
		mutex_lock(&s->lock);
		hs_session_stop(s);
		mutex_unlock(&s->lock);
		break;
	case HS_IOC_COUNTERS:
		hs_counters_sum(s, &u->counters);
		if (copy_to_user(uarg, &u->counters, sizeof(u->counters)))
			err = -EFAULT;
		break;
	case HS_IOC_COST:
		hs_cost_sum(s, &u->cost);
		if (copy_to_user(uarg, &u->cost, sizeof(u->cost)))
			err = -EFAULT;
		break;
	default:
		err = -ENOTTY;
	}
	kfree(u);
	return err;
}

static const struct file_operations hs_fops = {
	.owner = THIS_MODULE,
	.open = hs_open,
	.release = hs_release,
	.read = hs_read,
	.poll = hs_poll,
	.unlocked_ioctl = hs_ioctl,
};

static struct miscdevice hs_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hopscope",
	.fops = &hs_fops,
	.mode = 0600,
};

int hs_chardev_init(void)
{
	return misc_register(&hs_misc);
}

void hs_chardev_exit(void)
{
	misc_deregister(&hs_misc);
}
