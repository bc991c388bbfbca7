/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C forward pass (mlp.c) against the scikit-learn model: on the whole
 * test split, in batches of every size the server makes, each class is the
 * one scikit-learn predicted (stored by train.py), and the number right is
 * the offline model's.  Malformed model files are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "digits.h"
#include "mlp.h"

#define MODEL	MODEL_DIR "/digits_mlp.bin"
#define TESTSET MODEL_DIR "/digits_test.bin"

static struct mlp m;
static struct digits_test t;

static void
setup(void)
{
	cr_assert_eq(mlp_load(&m, MODEL, 450), 0);
	cr_assert_eq(digits_test_load(&t, TESTSET), 0);
	cr_assert_eq(m.n_in, t.n_pixels);
}

static void
teardown(void)
{
	mlp_free(&m);
	digits_test_free(&t);
}

TestSuite(model_mlp, .init = setup, .fini = teardown);

Test(model_mlp, shipped_files_are_the_trained_model)
{
	cr_assert_eq(m.n_in, 64);
	cr_assert_eq(m.n_hidden, 512);
	cr_assert_eq(m.n_out, 10);
	cr_assert_eq(t.n, 450);
	cr_assert_eq(t.correct, 441); /* train.py: accuracy 0.980000 */
}

/* Every batch size from 1 to 64, then the whole split at once: the same
 * classes as scikit-learn, image by image. */
Test(model_mlp, classes_equal_sklearn_for_every_batch_size)
{
	static const uint8_t *px[450];
	static uint8_t cls[450];
	unsigned int bs, i, j, right;

	for (i = 0; i < t.n; i++)
		px[i] = digits_pixels(&t, i);
	for (bs = 1; bs <= 65; bs++) {
		unsigned int b = bs == 65 ? t.n : bs;

		memset(cls, 0xff, sizeof(cls));
		for (i = 0; i < t.n; i += b) {
			unsigned int n = t.n - i < b ? t.n - i : b;

			cr_assert_eq(mlp_classify(&m, px + i, n, cls + i), 0);
		}
		right = 0;
		for (j = 0; j < t.n; j++) {
			cr_assert_eq(cls[j], digits_expected(&t, j),
				"batch size %u, image %u: C says %u, scikit-learn %u", b, j, cls[j],
				digits_expected(&t, j));
			right += cls[j] == digits_label(&t, j);
		}
		cr_assert_eq(right, t.correct, "batch size %u", b);
	}
}

Test(model_mlp, batch_bounds_refused)
{
	const uint8_t *px[1] = {digits_pixels(&t, 0)};
	uint8_t c;

	cr_assert_eq(mlp_classify(&m, px, 0, &c), -EINVAL);
	cr_assert_eq(mlp_classify(&m, px, 451, &c), -EINVAL);
	cr_assert_eq(mlp_classify(&m, NULL, 1, &c), -EINVAL);
	cr_assert_eq(mlp_classify(&m, px, 1, NULL), -EINVAL);
}

static void
write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(p, 1, len, f), len);
	fclose(f);
}

/* A file cut short, one byte too long, with a bad magic or version, or
 * that does not exist: refused, and nothing to free. */
Test(model_mlp, malformed_model_files_refused)
{
	char path[64];
	uint8_t *raw;
	size_t len;
	FILE *f = fopen(MODEL, "rb");
	struct mlp x;

	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	raw = malloc(len + 1);
	cr_assert_eq(fread(raw, 1, len, f), len);
	fclose(f);
	snprintf(path, sizeof(path), "/tmp/model-mlp-%d.bin", (int)getpid());

	write_file(path, raw, len - 1);
	cr_expect_eq(mlp_load(&x, path, 8), -EINVAL);
	raw[len] = 0;
	write_file(path, raw, len + 1);
	cr_expect_eq(mlp_load(&x, path, 8), -EINVAL);
	raw[0] = 'X';
	write_file(path, raw, len);
	cr_expect_eq(mlp_load(&x, path, 8), -EINVAL);
	raw[0] = 'D';
	raw[4] = 2;
	write_file(path, raw, len);
	cr_expect_eq(mlp_load(&x, path, 8), -EINVAL);
	raw[4] = 1;
	write_file(path, raw, len);
	cr_expect_eq(mlp_load(&x, path, 0), -EINVAL);
	cr_expect_eq(mlp_load(&x, path, 8), 0);
	mlp_free(&x);
	unlink(path);
	cr_expect_eq(mlp_load(&x, path, 8), -ENOENT);
	free(raw);
}
