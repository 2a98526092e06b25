/* Configuration strings (SPEC section 6): valid strings parse to the right fields and print back
 * canonically; every invalid one fails with one line that names the problem. */
#include <criterion/criterion.h>
#include <string.h>

#include "src/ssm/ssm_config.h"

static ssm_config ok(const char *text) {
  ssm_config c;
  char err[256] = "untouched";
  int rc = ssm_config_parse(text, &c, err, sizeof err);
  cr_assert_eq(rc, 0, "'%s' should parse: %s", text, err);
  return c;
}

static void bad(const char *text, const char *needle) {
  ssm_config c;
  char err[256] = "";
  int rc = ssm_config_parse(text, &c, err, sizeof err);
  cr_assert_eq(rc, -1, "'%s' should be refused", text);
  cr_assert(strstr(err, needle) != NULL, "'%s': message '%s' lacks '%s'", text, err, needle);
  cr_assert(strchr(err, '\n') == NULL, "'%s': message is more than one line", text);
}

static void canonical(const char *text, const char *expect) {
  ssm_config c = ok(text);
  char buf[256];
  ssm_config_to_string(&c, buf, sizeof buf);
  cr_assert_str_eq(buf, expect, "canonical of '%s'", text);
  /* it parses back to the same string */
  ssm_config c2 = ok(buf);
  char buf2[256];
  ssm_config_to_string(&c2, buf2, sizeof buf2);
  cr_assert_str_eq(buf2, buf);
}

Test(ssm_config, spec_examples_parse) {
  ssm_config c = ok("conventional state=fp32");
  cr_assert_eq(c.strategy, SSM_CONVENTIONAL);
  cr_assert_eq(c.state.kind, QF_FP32);
  c = ok("conventional state=fp8/sr");
  cr_assert_eq(c.state.kind, QF_FP8_E4M3);
  cr_assert_eq(c.state.rounding, QR_SR);
  c = ok("replay L=16 ckpt=nvfp4/sr");
  cr_assert_eq(c.strategy, SSM_REPLAY);
  cr_assert_eq(c.split, 0);
  cr_assert_eq(c.L, 16);
  cr_assert_eq(c.T, 0);
  cr_assert_eq(c.ckpt.kind, QF_NVFP4);
  c = ok("replay L=16 hp=fp16/sr lp=nvfp4");
  cr_assert_eq(c.split, 1);
  cr_assert_eq(c.hp.kind, QF_FP16);
  cr_assert_eq(c.hp.rounding, QR_SR);
  cr_assert_eq(c.lp.kind, QF_NVFP4);
  cr_assert_eq(c.lp.rounding, QR_RTN);
  c = ok("spec L=16 T=4 hp=fp32 lp=nvfp4 accept=uniform");
  cr_assert_eq(c.strategy, SSM_SPEC);
  cr_assert_eq(c.T, 4);
  cr_assert_eq(c.accept, SSM_ACCEPT_UNIFORM);
}

Test(ssm_config, defaults_and_fields) {
  ssm_config c = ok("replay");
  cr_assert_eq(c.L, 16);
  cr_assert_eq(c.ckpt.kind, QF_FP32);
  c = ok("spec ckpt=fp8@64");
  cr_assert_eq(c.L, 16);
  cr_assert_eq(c.T, 4);
  cr_assert_eq(c.ckpt.block, 64);
  c = ok("spec L=8 T=8 accept=fixed:8 hp=bf16/sr lp=mxfp4 gdn_u=cached");
  cr_assert_eq(c.accept, SSM_ACCEPT_FIXED);
  cr_assert_eq(c.accept_fixed, 8);
  cr_assert_eq(c.gdn_u, SSM_GDN_U_CACHED);
  c = ok("  spec\tT=2   accept=geom:0.75  ");
  cr_assert_eq(c.accept, SSM_ACCEPT_GEOM);
  cr_assert_float_eq(c.accept_p, 0.75, 0.0);
  c = ok("conventional");
  cr_assert_eq(c.state.kind, QF_FP32);
}

Test(ssm_config, canonical_strings) {
  canonical("conventional state=fp32", "conventional state=fp32");
  canonical("conventional", "conventional state=fp32");
  canonical("replay ckpt=nvfp4/sr L=16", "replay L=16 ckpt=nvfp4/sr");
  canonical("replay lp=nvfp4 hp=fp16/sr L=32", "replay L=32 hp=fp16/sr lp=nvfp4");
  canonical("spec hp=fp32 lp=nvfp4", "spec L=16 T=4 hp=fp32 lp=nvfp4 accept=uniform");
  canonical("spec accept=geom:0.1 T=2 L=4 ckpt=fp8@64/sr",
            "spec L=4 T=2 ckpt=fp8@64/sr accept=geom:0.1");
  canonical("spec T=3 accept=fixed:2 hp=fp32 lp=int8 gdn_u=cached",
            "spec L=16 T=3 hp=fp32 lp=int8 accept=fixed:2 gdn_u=cached");
  canonical("replay hp=fp32 lp=fp8 gdn_u=recompute", "replay L=16 hp=fp32 lp=fp8");
}

Test(ssm_config, name_defaults_to_canonical) {
  ssm_config c = ok("replay ckpt=nvfp4/sr");
  cr_assert_str_eq(c.name, "replay L=16 ckpt=nvfp4/sr");
  c = ok("replay ckpt=nvfp4/sr name=shared-nvfp4");
  cr_assert_str_eq(c.name, "shared-nvfp4");
  char buf[256];
  ssm_config_to_string(&c, buf, sizeof buf);
  cr_assert_str_eq(buf, "replay L=16 ckpt=nvfp4/sr", "the name is not part of the canonical string");
}

Test(ssm_config, syntax_errors) {
  bad("", "empty");
  bad("   ", "empty");
  bad("recurrent state=fp32", "unknown strategy 'recurrent'");
  bad("replay window=16", "unknown key 'window'");
  bad("replay L=", "missing value for key 'L'");
  bad("replay L", "expected key=value");
  bad("replay L=abc", "bad number in L=abc");
  bad("replay L=1.5", "bad number in L=1.5");
  bad("spec T=x", "bad number in T=x");
  bad("replay L=16 L=8", "duplicate key 'L'");
  bad("replay ckpt=fp9", "bad format in ckpt=fp9");
  bad("spec accept=sometimes", "unknown acceptance model");
  bad("spec accept=fixed:one", "bad number in accept=fixed:one");
  bad("spec accept=geom:", "bad number in accept=geom:");
  bad("replay hp=fp32 lp=fp8 gdn_u=maybe", "bad value gdn_u=maybe");
}

Test(ssm_config, contradictions) {
  bad("replay ckpt=fp8 hp=fp32 lp=fp8", "ckpt= (one shared checkpoint) contradicts hp=");
  bad("replay ckpt=fp8 lp=fp8", "contradicts lp=");
  bad("replay state=fp8", "state= applies to conventional only");
  bad("spec state=fp8", "state= applies to conventional only");
  bad("replay hp=fp32", "hp= without lp=");
  bad("replay lp=nvfp4", "lp= without hp=");
  bad("conventional ckpt=fp8", "ckpt= does not apply to conventional");
  bad("conventional hp=fp32 lp=fp8", "hp= does not apply to conventional");
  bad("conventional state=fp8 L=4", "L= does not apply to conventional");
  bad("replay T=4", "T= applies to spec only");
  bad("replay accept=uniform", "accept= applies to spec only");
  bad("conventional T=4", "T= does not apply to conventional");
  bad("replay L=0", "L=0: the replay window must be at least 1");
  bad("spec L=-3", "L=-3");
  bad("spec L=4 T=5", "T=5 > L=4");
  bad("spec T=0", "T=0: a spec round needs at least 1 draft");
  bad("spec T=4 accept=fixed:5", "accept=fixed:5 is outside [1, T=4]");
  bad("spec T=4 accept=fixed:0", "accept=fixed:0 is outside [1, T=4]");
  bad("spec accept=geom:0", "P must be in (0, 1]");
  bad("spec accept=geom:1.5", "P must be in (0, 1]");
  bad("spec accept=geom:nan", "P must be in (0, 1]");
  bad("replay ckpt=fp8 gdn_u=cached", "gdn_u=cached needs split precision");
}

Test(ssm_config, skip_key) {
  ssm_config c = ok("replay L=16 ckpt=fp32");
  cr_assert_eq(c.skip, 0.0, "absent skip= never skips");
  c = ok("replay skip=1e-3");
  cr_assert_eq(c.skip, 1e-3);
  c = ok("spec T=2 hp=fp32 lp=nvfp4 skip=0.25");
  cr_assert_eq(c.skip, 0.25);
  canonical("replay skip=1e-3", "replay L=16 ckpt=fp32 skip=0.001");
  canonical("replay skip=0.000123456789 hp=fp32 lp=nvfp4 gdn_u=cached",
            "replay L=16 hp=fp32 lp=nvfp4 gdn_u=cached skip=0.000123456789");
  canonical("spec skip=0.999999 L=8 T=2 accept=fixed:1",
            "spec L=8 T=2 ckpt=fp32 accept=fixed:1 skip=0.999999");
  canonical("replay skip=1e-300", "replay L=16 ckpt=fp32 skip=1e-300");
  c = ok("replay L=16 ckpt=fp32 skip=0.1");
  cr_assert_str_eq(c.name, "replay L=16 ckpt=fp32 skip=0.1");
  bad("replay skip=", "missing value for key 'skip'");
  bad("replay skip=abc", "bad number in skip=abc");
  bad("replay skip=1e-3x", "bad number in skip=1e-3x");
  bad("replay skip=1e-999", "bad number in skip=1e-999");
  bad("replay skip=0", "skip=0: the threshold must be in (0, 1)");
  bad("replay skip=-1e-3", "skip=-1e-3: the threshold must be in (0, 1)");
  bad("replay skip=1", "skip=1: the threshold must be in (0, 1)");
  bad("replay skip=nan", "skip=nan: the threshold must be in (0, 1)");
  bad("replay skip=inf", "the threshold must be in (0, 1)");
  bad("replay skip=1e-3 skip=1e-4", "duplicate key 'skip'");
  bad("conventional skip=1e-3", "skip= does not apply to conventional");
}

Test(ssm_config, long_name_is_refused) {
  char text[400] = "replay name=";
  for (int i = 0; i < 300; i++) strcat(text, "x");
  bad(text, "is too long");
  char text2[200] = "replay name=";
  for (int i = 0; i < SSM_NAME_MAX; i++) strcat(text2, "y");
  bad(text2, "name= is longer than 127 characters");
}
