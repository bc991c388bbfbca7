/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The digits MLP: loading digits_mlp.bin and the batched forward pass
 * (mlp.h says what it computes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "mlp.h"

/* Largest layer accepted from a file: the example's model is 64-512-10. */
#define MLP_DIM_MAX 4096

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int
read_all(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long sz;
	int rc = 0;

	*buf = NULL;
	if (f == NULL)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		rc = -EIO;
		goto out;
	}
	*buf = malloc(sz > 0 ? (size_t)sz : 1);
	if (*buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (fread(*buf, 1, (size_t)sz, f) != (size_t)sz) {
		free(*buf);
		*buf = NULL;
		rc = -EIO;
		goto out;
	}
	*len = (size_t)sz;
out:
	fclose(f);
	return rc;
}

int
mlp_load(struct mlp *m, const char *path, unsigned int max_batch)
{
	uint8_t *raw;
	size_t len = 0, nw, i;
	int rc;

	if (m == NULL || path == NULL || max_batch == 0)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	rc = read_all(path, &raw, &len);
	if (rc != 0)
		return rc;
	rc = -EINVAL;
	if (len < 20 || memcmp(raw, "DMLP", 4) != 0 || le32(raw + 4) != 1)
		goto out;
	m->n_in = le32(raw + 8);
	m->n_hidden = le32(raw + 12);
	m->n_out = le32(raw + 16);
	if (m->n_in == 0 || m->n_hidden == 0 || m->n_out == 0 || m->n_in > MLP_DIM_MAX ||
		m->n_hidden > MLP_DIM_MAX || m->n_out > 256)
		goto out;
	nw = (size_t)m->n_in * m->n_hidden + m->n_hidden + (size_t)m->n_hidden * m->n_out +
	     m->n_out;
	if (len != 20 + nw * sizeof(float))
		goto out;
	rc = -ENOMEM;
	m->max_batch = max_batch;
	m->w1 = malloc(
		(nw + (size_t)max_batch * (m->n_in + m->n_hidden + m->n_out)) * sizeof(float));
	if (m->w1 == NULL)
		goto out;
	for (i = 0; i < nw; i++) {
		uint32_t u = le32(raw + 20 + 4 * i);

		memcpy(&m->w1[i], &u, sizeof(u));
	}
	m->b1 = m->w1 + (size_t)m->n_in * m->n_hidden;
	m->w2 = m->b1 + m->n_hidden;
	m->b2 = m->w2 + (size_t)m->n_hidden * m->n_out;
	m->x = m->b2 + m->n_out;
	m->h = m->x + (size_t)max_batch * m->n_in;
	m->o = m->h + (size_t)max_batch * m->n_hidden;
	/* One thread: a batch is small (at most a few hundred rows), and the
	 * other core belongs to the poller; OpenBLAS's own threads would
	 * spin on it. */
	openblas_set_num_threads(1);
	rc = 0;
out:
	free(raw);
	if (rc != 0)
		memset(m, 0, sizeof(*m));
	return rc;
}

void
mlp_free(struct mlp *m)
{
	if (m == NULL)
		return;
	free(m->w1);
	memset(m, 0, sizeof(*m));
}

int
mlp_classify(struct mlp *m, const uint8_t *const *pixels, unsigned int n, uint8_t *classes)
{
	unsigned int i, j;

	if (m == NULL || m->w1 == NULL || pixels == NULL || classes == NULL || n == 0 ||
		n > m->max_batch)
		return -EINVAL;
	/* x = pixels / 16 (exact in float); h and o start as their biases
	 * and sgemm adds the products (beta 1). */
	for (i = 0; i < n; i++) {
		for (j = 0; j < m->n_in; j++)
			m->x[(size_t)i * m->n_in + j] = (float)pixels[i][j] / 16.0f;
		memcpy(m->h + (size_t)i * m->n_hidden, m->b1, m->n_hidden * sizeof(float));
		memcpy(m->o + (size_t)i * m->n_out, m->b2, m->n_out * sizeof(float));
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m->n_hidden,
		(int)m->n_in, 1.0f, m->x, (int)m->n_in, m->w1, (int)m->n_hidden, 1.0f, m->h,
		(int)m->n_hidden);
	for (i = 0; i < n * m->n_hidden; i++)
		if (!(m->h[i] > 0.0f))
			m->h[i] = 0.0f;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m->n_out,
		(int)m->n_hidden, 1.0f, m->h, (int)m->n_hidden, m->w2, (int)m->n_out, 1.0f, m->o,
		(int)m->n_out);
	for (i = 0; i < n; i++) {
		const float *o = m->o + (size_t)i * m->n_out;
		unsigned int best = 0;

		for (j = 1; j < m->n_out; j++)
			if (o[j] > o[best])
				best = j;
		classes[i] = (uint8_t)best;
	}
	return 0;
}
