/* SPDX-License-Identifier: BSD-3-Clause */
/* Loading the digits test split (digits.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int
digits_test_load(struct digits_test *t, const char *path)
{
	uint8_t hdr[20];
	size_t len;
	FILE *f;
	int rc = -EINVAL;

	if (t == NULL || path == NULL)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	f = fopen(path, "rb");
	if (f == NULL)
		return -errno;
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) || memcmp(hdr, "DTST", 4) != 0 ||
		le32(hdr + 4) != 1)
		goto out;
	t->n = le32(hdr + 8);
	t->n_pixels = le32(hdr + 12);
	t->correct = le32(hdr + 16);
	if (t->n == 0 || t->n > 1000000 || t->n_pixels == 0 || t->n_pixels > 4096 ||
		t->correct > t->n)
		goto out;
	len = (size_t)t->n * (t->n_pixels + 2);
	rc = -ENOMEM;
	t->rec = malloc(len + 1);
	if (t->rec == NULL)
		goto out;
	rc = -EINVAL;
	/* Exactly len bytes: one more read must find the end. */
	if (fread(t->rec, 1, len + 1, f) != len) {
		free(t->rec);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	if (rc != 0)
		memset(t, 0, sizeof(*t));
	return rc;
}

void
digits_test_free(struct digits_test *t)
{
	if (t == NULL)
		return;
	free(t->rec);
	memset(t, 0, sizeof(*t));
}
