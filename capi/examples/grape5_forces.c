/* A collisionless code written against GRAPE-5: a Plummer sphere's forces and
 * potentials from g5_calculate_force_on_x, checked against a plain double loop, through
 * the C and the Fortran spellings; then bad input, reported and survived.
 * Build: cc -std=c11 grape5_forces.c -I capi/include libnbody_c.a -lm ... */
#include <grape5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long long state = 2024;

static double uniform(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(state >> 11) + 0.5) / 9007199254740992.0;
}

#define N 1500

static double x[N][3], m[N], a[N][3], p[N], a_ref[N][3], p_ref[N];

/* Largest relative error of the forces (against the largest force) and potentials. */
static double worst(void) {
  double amax = 0, err = 0;
  for (int i = 0; i < N; i++) amax = fmax(amax, sqrt(a_ref[i][0] * a_ref[i][0] + a_ref[i][1] * a_ref[i][1] + a_ref[i][2] * a_ref[i][2]));
  for (int i = 0; i < N; i++) {
    for (int c = 0; c < 3; c++) err = fmax(err, fabs(a[i][c] - a_ref[i][c]) / amax);
    err = fmax(err, fabs(p[i] - p_ref[i]) / fabs(p_ref[i]));
  }
  return err;
}

int main(void) {
  for (int i = 0; i < N; i++) {
    double r = 1.0 / sqrt(pow(0.999 * uniform(), -2.0 / 3.0) - 1.0);
    double z = 2.0 * uniform() - 1.0, phi = 2.0 * M_PI * uniform(), s = sqrt(1.0 - z * z);
    x[i][0] = r * s * cos(phi), x[i][1] = r * s * sin(phi), x[i][2] = r * z;
    m[i] = 1.0 / N;
  }
  const double eps = 1.0 / 64;
  /* The board's rule: every j acts on every i, the pair (i, i) included (-m/eps). */
  for (int i = 0; i < N; i++) {
    double s[4] = {0, 0, 0, 0};
    for (int k = 0; k < N; k++) {
      double d[3] = {x[k][0] - x[i][0], x[k][1] - x[i][1], x[k][2] - x[i][2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps * eps, rinv = 1.0 / sqrt(r2);
      for (int c = 0; c < 3; c++) s[c] += m[k] * d[c] * rinv * rinv * rinv;
      s[3] -= m[k] * rinv;
    }
    for (int c = 0; c < 3; c++) a_ref[i][c] = s[c];
    p_ref[i] = s[3];
  }
  int failures = 0;
  g5_open();
  printf("pipelines %d\n", g5_get_number_of_pipelines());
  g5_set_range(-64.0, 64.0, 1.0 / N);
  g5_set_n(N);
  g5_set_eps_to_all(eps);
  g5_set_xmj(0, N, x, m);
  g5_calculate_force_on_x(x, a, p, N);
  double e = worst();
  printf("C spelling: worst relative error %.3e\n", e);
  if (!(e < 1e-12)) failures++;

  /* The Fortran spellings, j-memory written in two pieces. */
  int zero = 0, half = N / 2, rest = N - N / 2, n = N;
  double soft = eps;
  for (int i = 0; i < N; i++) a[i][0] = a[i][1] = a[i][2] = p[i] = 0;
  g5_close_();
  g5_open_();
  g5_set_n_(&n);
  g5_set_eps_to_all_(&soft);
  g5_set_xmj_(&zero, &half, x, m);
  g5_set_xmj_(&half, &rest, x + half, m + half);
  g5_calculate_force_on_x_(x, a, p, &n);
  e = worst();
  printf("Fortran spelling: worst relative error %.3e\n", e);
  if (!(e < 1e-12)) failures++;

  /* Bad input: reported on stderr, the outputs untouched, the program goes on. */
  double bad[1][3] = {{NAN, 0, 0}}, out[1][3] = {{7, 7, 7}}, pout[1] = {7};
  g5_calculate_force_on_x(bad, out, pout, 1);
  if (out[0][0] != 7 || pout[0] != 7) failures++;
  g5_set_eps_to_all(-1.0);
  g5_close();
  g5_calculate_force_on_x(x, a, p, 1); /* closed: an error message, no crash */
  printf(failures ? "FAILED\n" : "passed\n");
  return failures != 0;
}
