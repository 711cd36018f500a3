"""manifest_second.py - issue 43's second corpus: real PyTorch programs from sources that
the first corpus (manifest.py's FIRST) does not use. Entries as manifest.py describes."""

SECOND = [
    {
        "name": "gk_nnlm",
        "file": "gk_nnlm.py",
        "repo": "graykode/nlp-tutorial",
        "path": "1-1.NNLM/NNLM.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_word2vec_skipgram",
        "file": "gk_word2vec_skipgram.py",
        "repo": "graykode/nlp-tutorial",
        "path": "1-2.Word2Vec/Word2Vec-Skipgram(Softmax).py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_textcnn",
        "file": "gk_textcnn.py",
        "repo": "graykode/nlp-tutorial",
        "path": "2-1.TextCNN/TextCNN.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_textrnn",
        "file": "gk_textrnn.py",
        "repo": "graykode/nlp-tutorial",
        "path": "3-1.TextRNN/TextRNN.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_textlstm",
        "file": "gk_textlstm.py",
        "repo": "graykode/nlp-tutorial",
        "path": "3-2.TextLSTM/TextLSTM.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "1000 epochs cut to 300"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_bilstm",
        "file": "gk_bilstm.py",
        "repo": "graykode/nlp-tutorial",
        "path": "3-3.Bi-LSTM/Bi-LSTM.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "10000 epochs cut to 300, logged every 100"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_seq2seq",
        "file": "gk_seq2seq.py",
        "repo": "graykode/nlp-tutorial",
        "path": "4-1.Seq2Seq/Seq2Seq.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_seq2seq_attention",
        "file": "gk_seq2seq_attention.py",
        "repo": "graykode/nlp-tutorial",
        "path": "4-2.Seq2Seq(Attention)/Seq2Seq(Attention).py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "2000 epochs cut to 400, logged every 100"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gk_bilstm_attention",
        "file": "gk_bilstm_attention.py",
        "repo": "graykode/nlp-tutorial",
        "path": "4-3.Bi-LSTM(Attention)/Bi-LSTM(Attention).py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "5000 epochs cut to 1000, logged every 200"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "gk_transformer",
        "file": "gk_transformer.py",
        "repo": "graykode/nlp-tutorial",
        "path": "5-1.Transformer/Transformer.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "the model shrunk: d_model 512 -> 64, d_ff 2048 -> 256, d_k = d_v 64 -> 16, 6 layers -> 2, 8 heads -> 4"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gk_transformer_greedy",
        "file": "gk_transformer_greedy.py",
        "repo": "graykode/nlp-tutorial",
        "path": "5-1.Transformer/Transformer(Greedy_decoder).py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "the model shrunk: d_model 512 -> 64, d_ff 2048 -> 256, d_k = d_v 64 -> 16, 6 layers -> 2, 8 heads -> 4"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gk_bert",
        "file": "gk_bert.py",
        "repo": "graykode/nlp-tutorial",
        "path": "5-2.BERT/BERT.py",
        "commit": "d05e31ec81d56d70c1db89b99ab07e948f7ebc11",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "the model shrunk: 6 layers -> 2, 12 heads -> 4, d_model 768 -> 64, d_ff 3072 -> 256, d_k = d_v 64 -> 16"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "ngv_bigram",
        "file": "ngv_bigram.py",
        "repo": "karpathy/ng-video-lecture",
        "path": "bigram.py",
        "commit": "52201428ed7b46804849dea0b3ccf0de9df1a5c3",
        "license": "MIT",
        "license_file": "README.md",
        "data": {
            "input.txt": [
                "text",
                20000,
                "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            ]
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "3000 iterations cut to 300, evaluated every 100 on 20 batches (not 300 and 200)",
            "100 tokens generated, not 500",
            "input.txt (Tiny Shakespeare, a download) replaced by 20000 random characters of its alphabet (manifest `data`)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "ngv_gpt",
        "file": "ngv_gpt.py",
        "repo": "karpathy/ng-video-lecture",
        "path": "gpt.py",
        "commit": "52201428ed7b46804849dea0b3ccf0de9df1a5c3",
        "license": "MIT",
        "license_file": "README.md",
        "data": {
            "input.txt": [
                "text",
                20000,
                "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            ]
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "the model and run shrunk: batch 64 -> 16, block 256 -> 32, 5000 iterations -> 20, evaluated every 10 on 5 batches, n_embd 384 -> 64, 6 heads -> 4, 6 layers -> 2",
            "100 tokens generated, not 500",
            "input.txt replaced by 20000 random characters of its alphabet (manifest `data`)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "mingpt_adder",
        "file": "mingpt_adder.py",
        "repo": "karpathy/minGPT",
        "path": "projects/adder/adder.py",
        "commit": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
        "license": "MIT",
        "args": [
            "--trainer.max_iters=20",
            "--data.ndigit=1"
        ],
        "with": [
            "mingpt/__init__.py",
            "mingpt/model.py",
            "mingpt/trainer.py",
            "mingpt/utils.py"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": [],
        "mask": "iter_dt [\\d.]+ms"
    },
    {
        "name": "mingpt_chargpt",
        "file": "mingpt_chargpt.py",
        "repo": "karpathy/minGPT",
        "path": "projects/chargpt/chargpt.py",
        "commit": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
        "license": "MIT",
        "args": [
            "--model.model_type=gpt-nano",
            "--data.block_size=32",
            "--trainer.max_iters=20"
        ],
        "with": [
            "mingpt/__init__.py",
            "mingpt/model.py",
            "mingpt/trainer.py",
            "mingpt/utils.py"
        ],
        "data": {
            "input.txt": [
                "text",
                20000,
                "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            ]
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "100 tokens sampled per report, not 500",
            "input.txt replaced by 20000 random characters (manifest `data`); model size and iterations set by its own command-line config (manifest `args`)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": [],
        "mask": "iter_dt [\\d.]+ms"
    },
    {
        "name": "nanogpt_train",
        "file": "nanogpt_train.py",
        "repo": "karpathy/nanoGPT",
        "path": "train.py",
        "commit": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
        "license": "MIT",
        "args": [
            "config/train_shakespeare_char.py",
            "--device=cpu",
            "--compile=False",
            "--eval_iters=2",
            "--eval_interval=5",
            "--log_interval=1",
            "--block_size=32",
            "--batch_size=4",
            "--n_layer=2",
            "--n_head=2",
            "--n_embd=32",
            "--max_iters=10",
            "--lr_decay_iters=10",
            "--dropout=0.0"
        ],
        "data": {
            "data/shakespeare_char/train.bin": [
                "tokens",
                20000,
                65
            ],
            "data/shakespeare_char/val.bin": [
                "tokens",
                2000,
                65
            ],
            "data/shakespeare_char/meta.pkl": [
                "pickle",
                {
                    "vocab_size": 65
                }
            ]
        },
        "with": [
            "model.py",
            "configurator.py",
            "config/train_shakespeare_char.py"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": [],
        "mask": "time [\\d.]+ms, mfu -?[\\d.]+%"
    },
    {
        "name": "makemore",
        "file": "makemore.py",
        "repo": "karpathy/makemore",
        "path": "makemore.py",
        "commit": "988aa59e4d8fefa526d06f3b453ad116258398d4",
        "license": "MIT",
        "args": [
            "--max-steps",
            "20"
        ],
        "data": {
            "names.txt": [
                "lines",
                2000,
                "abcdefghijklmnopqrstuvwxyz",
                3,
                10
            ]
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "tensorboard's SummaryWriter (not installed) replaced by a class that keeps nothing",
            "names.txt replaced by 2000 random lower-case names of 3 to 10 letters (manifest `data`); 20 steps (manifest `args`)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": [],
        "mask": "step time [\\d.]+ms"
    },
    {
        "name": "gan_wgan_gp",
        "file": "gan_wgan_gp.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/wgan_gp/wgan_gp.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gan_wgan_div",
        "file": "gan_wgan_div.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/wgan_div/wgan_div.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gan_infogan",
        "file": "gan_infogan.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/infogan/infogan.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gan_dcgan",
        "file": "gan_dcgan.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/dcgan/dcgan.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gan_cgan",
        "file": "gan_cgan.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/cgan/cgan.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "gan_acgan",
        "file": "gan_acgan.py",
        "repo": "eriklindernoren/PyTorch-GAN",
        "path": "implementations/acgan/acgan.py",
        "commit": "36d3c77e5ff20ebe0aeefd322326a134a279b93e",
        "license": "MIT",
        "args": [
            "--n_epochs",
            "1"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed; MNIST is replaced)",
            "MNIST replaced by a TensorDataset of 640 random images in [-1, 1] at opt.img_size, with random labels",
            "save_image (torchvision) replaced by a one-line function that prints the images' mean"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "rl_reinforce",
        "file": "rl_reinforce.py",
        "repo": "seungeunrho/minimalRL",
        "path": "REINFORCE.py",
        "commit": "c8efed8481e3cd40e9739cfde220a55522555b57",
        "license": "MIT",
        "stubs": [
            "gym"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "10000 episodes cut to 60",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "rl_actor_critic",
        "file": "rl_actor_critic.py",
        "repo": "seungeunrho/minimalRL",
        "path": "actor_critic.py",
        "commit": "c8efed8481e3cd40e9739cfde220a55522555b57",
        "license": "MIT",
        "stubs": [
            "gym"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "10000 episodes cut to 60",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "rl_dqn",
        "file": "rl_dqn.py",
        "repo": "seungeunrho/minimalRL",
        "path": "dqn.py",
        "commit": "c8efed8481e3cd40e9739cfde220a55522555b57",
        "license": "MIT",
        "stubs": [
            "gym"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "10000 episodes cut to 60; training starts once the replay memory holds 200 transitions, not 2000",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "rl_ppo",
        "file": "rl_ppo.py",
        "repo": "seungeunrho/minimalRL",
        "path": "ppo.py",
        "commit": "c8efed8481e3cd40e9739cfde220a55522555b57",
        "license": "MIT",
        "stubs": [
            "gym"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "10000 episodes cut to 60",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "rl_a3c",
        "file": "rl_a3c.py",
        "repo": "seungeunrho/minimalRL",
        "path": "a3c.py",
        "commit": "c8efed8481e3cd40e9739cfde220a55522555b57",
        "license": "MIT",
        "stubs": [
            "gym"
        ],
        "env": {
            "CORPUS_GYM_API": "0.21"
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "300 training and 400 test episodes cut to 20 and 40",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": False,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "not compared: its workers race (which one updates the shared model when is the scheduler's), so its numbers differ from run to run in either library",
        "workaround": []
    },
    {
        "name": "a3c_discrete",
        "file": "a3c_discrete.py",
        "repo": "MorvanZhou/pytorch-A3C",
        "path": "discrete_A3C.py",
        "commit": "5ab27abee2c3ac3ca921ac393bfcbda4e0a91745",
        "license": "MIT",
        "with": [
            "shared_adam.py",
            "utils.py"
        ],
        "stubs": [
            "gym"
        ],
        "env": {
            "CORPUS_GYM_API": "0.21"
        },
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "3000 episodes cut to 40",
            "gym (not installed) given by tests/corpus/stubs/gym, CartPole with gym's physics"
        ],
        "needs": [],
        "compare": False,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "not compared: its workers race (which one updates the shared model when is the scheduler's), so its numbers differ from run to run in either library",
        "workaround": []
    },
    {
        "name": "vit_mnist",
        "file": "vit_mnist.py",
        "repo": "BrianPulfer/PapersReimplementations",
        "path": "src/cv/vit/vit_torch.py",
        "commit": "ce70cab23f7157d911fa541b387797d9d64c65fc",
        "license": "MIT",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports removed (not installed)",
            "MNIST replaced by TensorDatasets of random 1x28x28 images and labels (512 train, 256 test)",
            "5 epochs cut to 1"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "vit_from_scratch",
        "file": "vit_from_scratch.py",
        "repo": "tintn/vision-transformer-from-scratch",
        "path": "train.py",
        "commit": "52c59c6e52f66f9265e799457c9dcedc020fd483",
        "license": "MIT",
        "args": [
            "--exp-name",
            "corpus",
            "--epochs",
            "1"
        ],
        "with": [
            "vit.py",
            "data.py",
            "utils.py"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "data.py: torchvision removed; CIFAR-10 and its transforms replaced by TensorDatasets of random 3x32x32 images in [-1, 1] and labels (512 train, 256 test)",
            "utils.py: the torchvision imports removed",
            "1 epoch (manifest `args`)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": "",
        "workaround": []
    },
    {
        "name": "cifar_models",
        "file": "cifar_models.py",
        "repo": "kuangliu/pytorch-cifar",
        "path": "main.py",
        "commit": "49b7aa97b0c12fe0d4054e670403a16b6b834ddd",
        "license": "MIT",
        "with": [
            "utils.py",
            "models/__init__.py",
            "models/vgg.py",
            "models/dpn.py",
            "models/lenet.py",
            "models/senet.py",
            "models/pnasnet.py",
            "models/densenet.py",
            "models/googlenet.py",
            "models/shufflenet.py",
            "models/shufflenetv2.py",
            "models/resnet.py",
            "models/resnext.py",
            "models/preact_resnet.py",
            "models/mobilenet.py",
            "models/mobilenetv2.py",
            "models/efficientnet.py",
            "models/regnet.py",
            "models/dla_simple.py",
            "models/dla.py"
        ],
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)",
            "torchvision imports and transforms removed (not installed)",
            "CIFAR-10 replaced by TensorDatasets of random 3x32x32 images and labels (128 train, 100 test)",
            "200 epochs cut to 1",
            "utils.py: the terminal width read from `stty size` replaced by 80 (no terminal here)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    },
    {
        "name": "resnet_cifar",
        "file": "resnet_cifar.py",
        "repo": "akamaster/pytorch_resnet_cifar10",
        "path": "resnet.py",
        "commit": "d5489e8995e81e91ce6b1d69dcc98ad579b0b153",
        "license": "BSD-2-Clause",
        "edits": [
            "imports spelled `import pygpu as torch` (and `pygpu.nn`, `pygpu.utils.data`, ...)"
        ],
        "needs": [],
        "compare": True,
        "rtol": 0.002,
        "atol": 1e-05,
        "note": ""
    }
]
