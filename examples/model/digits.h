/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The digits test split that train.py writes (digits_test.bin, format in
 * README.md): n images of n_pixels pixels, each with its label and the
 * class the scikit-learn model predicted, and how many of the n that
 * model got right.  The client, the server's checks and the tests read it.
 */
#ifndef MODEL_DIGITS_H
#define MODEL_DIGITS_H

#include <stdint.h>

struct digits_test {
	unsigned int n, n_pixels;
	unsigned int correct; /* the offline model's correct answers */
	uint8_t *rec;	      /* n records of n_pixels + 2 bytes (owned) */
};

/* @return 0; -errno of open/read; -EINVAL (not such a file); -ENOMEM. */
int digits_test_load(struct digits_test *t, const char *path);
void digits_test_free(struct digits_test *t);

static inline const uint8_t *
digits_pixels(const struct digits_test *t, unsigned int i)
{
	return t->rec + (size_t)i * (t->n_pixels + 2);
}

static inline uint8_t
digits_label(const struct digits_test *t, unsigned int i)
{
	return digits_pixels(t, i)[t->n_pixels];
}

/* The class the offline (scikit-learn) model predicted for image i. */
static inline uint8_t
digits_expected(const struct digits_test *t, unsigned int i)
{
	return digits_pixels(t, i)[t->n_pixels + 1];
}

#endif /* MODEL_DIGITS_H */
