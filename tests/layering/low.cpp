// A lower layer's object that calls a function of the higher layer (high.cpp):
// the upward reference scripts/check_layers.py must report.
int layering_example_high(int x);
int layering_example_low(int x) { return layering_example_high(x) + 1; }
