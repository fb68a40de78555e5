// The higher layer of the layering check's example (see low.cpp).
int layering_example_low(int x);
int layering_example_high(int x) { return x * 2; }
int layering_example_high_uses_low(int x) { return layering_example_low(x); }
