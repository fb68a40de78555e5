#!/usr/bin/python3
# Writes the recurrent test models of tests/unit/test_recurrent.cpp: small
# language models exported by torch.onnx (torch 1.13), each with the inputs
# it was run on and torch's outputs (NAME.input_I.npy, NAME.output_I.npy), so
# the test checks Tessera against torch as well as against its own reference
# interpreter. Not run by the tests; run it again only to change the models:
#   /usr/bin/python3 tests/models/recurrent/make_models.py
import os

import numpy as np
import torch
import torch.nn as nn

VOCAB, EMBED, HIDDEN, STEPS = 50, 16, 24, 20
HERE = os.path.dirname(os.path.abspath(__file__))


class LanguageModel(nn.Module):
    """Embedding -> recurrent layers (batch first) -> Linear; optionally the
    initial states as inputs and the final states as outputs."""

    def __init__(self, cell, layers, bidirectional=False, states=False):
        super().__init__()
        self.cell, self.states = cell, states
        self.embed = nn.Embedding(VOCAB, EMBED)
        kind = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell]
        self.rnn = kind(EMBED, HIDDEN, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(HIDDEN * (2 if bidirectional else 1), VOCAB)

    def forward(self, ids, *initial):
        x = self.embed(ids)
        if initial:
            y, final = self.rnn(x, tuple(initial) if self.cell == "lstm" else initial[0])
        else:
            y, final = self.rnn(x)
        logits = self.fc(y)
        if not self.states:
            return logits
        return (logits,) + (final if isinstance(final, tuple) else (final,))


def export(name, opset, model, inputs, input_names, output_names):
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, tuple(inputs), path, opset_version=opset, input_names=input_names,
                      output_names=output_names)
    with torch.no_grad():
        outputs = model(*inputs)
    if not isinstance(outputs, tuple):
        outputs = (outputs,)
    for i, t in enumerate(inputs):
        np.save(os.path.join(HERE, f"{name}.input_{i}.npy"), t.numpy())
    for i, t in enumerate(outputs):
        np.save(os.path.join(HERE, f"{name}.output_{i}.npy"), t.numpy())


def main():
    torch.manual_seed(22)
    ids = torch.randint(0, VOCAB, (1, STEPS))
    # The model of issue 22, scaled down: two LSTM layers.
    export("lstm2", 13, LanguageModel("lstm", 2), [ids], ["ids"], ["logits"])
    export("gru2", 14, LanguageModel("gru", 2), [ids], ["ids"], ["logits"])
    export("bilstm", 17, LanguageModel("lstm", 1, bidirectional=True), [ids], ["ids"], ["logits"])
    # Initial states given as inputs, final states returned.
    h0 = torch.randn(2, 1, HIDDEN) * 0.5
    export("rnn2_states", 15, LanguageModel("rnn", 2, states=True), [ids, h0], ["ids", "h0"],
           ["logits", "h_n"])
    c0 = torch.randn(2, 1, HIDDEN) * 0.5
    export("lstm2_states", 16, LanguageModel("lstm", 2, states=True), [ids, h0, c0], ["ids", "h0", "c0"],
           ["logits", "h_n", "c_n"])


if __name__ == "__main__":
    main()
