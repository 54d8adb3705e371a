#ifndef VT_SYM_FIXTURE_H
#define VT_SYM_FIXTURE_H

struct fixture_point {
	void *ra;        /* return address into the function that called mark */
	int line;        /* line of that call */
	int outer_line;  /* for the inline case: line of the inlined call */
};

extern struct fixture_point fixture_last;

void fixture_alpha(void);
void fixture_inline_outer(void);

#endif
