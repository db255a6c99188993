/* libhooks.h -- allocation hooks for the libraries (src/libhooks.c):
 * PCRE2 contexts that allocate through as_xmalloc, GLPK's terminal and
 * error hooks.  as_lib_hooks_install itself is declared in autoshard.h.
 */
#ifndef AS_LIBHOOKS_H
#define AS_LIBHOOKS_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

/** The general context every PCRE2 object is made with (allocates through as_xmalloc). */
pcre2_general_context *as_pcre2_gcontext(void);
/** A compile context on as_pcre2_gcontext(). */
pcre2_compile_context *as_pcre2_ccontext(void);
/** GLPK's terminal hook: output to stderr only with -v, last line kept for the error hook. */
int as_glpk_term(void *info, const char *s);
/** Install GLPK's terminal and error hooks in this thread's GLPK environment. */
void as_glpk_hooks(void);

#endif /* AS_LIBHOOKS_H */
