/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The digits MLP's forward pass, batched on OpenBLAS (cblas_sgemm).
 *
 * The model is the one train.py writes (digits_mlp.bin, format in
 * README.md): hidden = relu(x W1 + b1), logits = hidden W2 + b2, class =
 * the first maximum of the logits, x = pixels / 16.  A batch of n images
 * is two sgemm calls on n-row matrices; the scratch matrices are sized
 * for max_batch rows at load time, so classifying allocates nothing.
 *
 * Not thread-safe: one struct mlp per thread that classifies (the
 * scratch is the model's).  No DPDK, no dprpc: the unit test and the
 * server share it.
 */
#ifndef MODEL_MLP_H
#define MODEL_MLP_H

#include <stdint.h>

struct mlp {
	unsigned int n_in, n_hidden, n_out, max_batch;
	float *w1, *b1, *w2, *b2; /* one allocation, owned (mlp_free()) */
	float *x, *h, *o;	  /* scratch: max_batch rows of each layer */
};

/*
 * Load digits_mlp.bin from @path for batches of up to @max_batch images.
 * @return 0; -errno of open/read; -EINVAL (not such a file: magic,
 * version, sizes, length; or max_batch 0); -ENOMEM.  On failure @m holds
 * nothing to free.
 */
int mlp_load(struct mlp *m, const char *path, unsigned int max_batch);

void mlp_free(struct mlp *m);

/*
 * Classify @n images: @pixels[i] points to n_in pixel values (0..16) of
 * image i; @classes[i] receives its class (0..n_out-1).
 * @return 0; -EINVAL for n 0 or over max_batch, or NULL arguments.
 */
int mlp_classify(struct mlp *m, const uint8_t *const *pixels, unsigned int n, uint8_t *classes);

#endif /* MODEL_MLP_H */
