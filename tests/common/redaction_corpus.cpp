#include "tests/common/redaction_corpus.h"

namespace dashcam::testing {

std::vector<std::string> OrdinaryLogLines() {
  return {
      // PyTorch / training loop.
      "epoch 3 step 1200/5000 loss=0.4312 lr=2.00e-05 grad_norm=0.87 tokens/s=152334",
      "step 1200 | loss 2.1345 | lr 3.00e-04 | tokens/s 152,334 | mfu 41.2% | mem 61234MiB",
      "throughput: 1523.4 tokens/sec/gpu, 12187.2 tokens/s total, 8 ranks",
      "[rank0]: iteration 4500/100000 | consumed samples: 2304000 | elapsed time per iteration "
      "(ms): 812.4 | learning rate: 2.999E-04 | global batch size: 512 | lm loss: 2.071E+00 | "
      "num_tokens: 2097152",
      "Epoch 1/3:  45%|####5     | 450/1000 [02:13<02:43,  3.37it/s, loss=1.234, lr=2e-5]",
      "{'loss': 1.2345, 'grad_norm': 0.9812, 'learning_rate': 4.5e-05, 'epoch': 0.12}",
      "{'train_runtime': 1234.5678, 'train_samples_per_second': 12.3, "
      "'train_steps_per_second': 0.77, 'train_tokens_per_second': 4521.3, 'train_loss': 1.02, "
      "'epoch': 3.0}",
      "Saving model checkpoint to /mnt/ckpt/llama7b-sft-017/checkpoint-1200",
      "Loading checkpoint shards: 100%|##########| 2/2 [00:04<00:00,  2.13s/it]",
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.15 GiB total "
      "capacity; 74.02 GiB already allocated; 1.25 GiB free; 76.10 GiB reserved in total by "
      "PyTorch)",
      "torch.distributed.elastic.agent.server.api: [default] Starting worker group, "
      "master_addr=10.0.3.17 master_port=29500 rank=0 world_size=8",
      "model.embed_tokens.weight: torch.Size([32000, 4096]) dtype=torch.bfloat16",
      "Some weights of BertForSequenceClassification were not initialized from the model "
      "checkpoint at bert-base-uncased and are newly initialized: ['classifier.bias', "
      "'classifier.weight']",
      "INFO:root:Loaded 1,234,567 samples (512 tokens each) from /data/pile/train-00017.jsonl",
      "max_tokens=2048 temperature=0.7 top_p=0.95 num_return_sequences=4",
      "num_tokens: 512",
      "max_new_tokens: 256, min_new_tokens: 1, total_tokens: 8192",
      "generation: max_tokens=4096, stop_token_ids=[2, 32000]",
      "Token indices sequence length is longer than the specified maximum sequence length for "
      "this model (1024 > 512). Running this sequence through the model will result in indexing "
      "errors",
      // Hugging Face tokenizers and configs.
      "--tokenizer_name bert-base-uncased --max_seq_length 512 --per_device_train_batch_size 32",
      "accelerate launch --num_processes 8 train.py --model_name_or_path "
      "meta-llama/Llama-2-7b-hf --tokenizer_name meta-llama/Llama-2-7b-hf",
      "tokenizer: LlamaTokenizerFast(name_or_path='meta-llama/Llama-2-7b-hf', vocab_size=32000, "
      "model_max_length=4096, is_fast=True, padding_side='left', truncation_side='right', "
      "special_tokens={'bos_token': '<s>', 'eos_token': '</s>', 'unk_token': '<unk>'}, "
      "clean_up_tokenization_spaces=False)",
      "pad_token_id=0",
      "eos_token: </s>",
      "bos_token=<s> eos_token=</s> unk_token=<unk> pad_token=<pad> mask_token=[MASK]",
      "Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.",
      "Using sep_token, but it is not set yet.",
      "Special tokens have been added in the vocabulary, make sure the associated word "
      "embeddings are fine-tuned or trained.",
      "GenerationConfig {\"bos_token_id\": 1, \"eos_token_id\": 2, \"pad_token_id\": 0, "
      "\"max_length\": 4096}",
      "token_type_ids: [0, 0, 0, 0, 1, 1, 1]",
      "token_type: bearer",
      "loading file tokenizer.json from cache at "
      "/root/.cache/huggingface/hub/models--bert-base-uncased/snapshots/"
      "86b5e0934494bd15c9632b12f734a8a67f723594/tokenizer.json",
      "loading file tokenizer_config.json: vocab_file=None, merges_file=None, "
      "tokenizer_file=/root/.cache/huggingface/hub/tokenizer.json",
      "Downloading tokenizer.model: 100%|##########| 500k/500k [00:00<00:00, 12.1MB/s]",
      "huggingface/tokenizers: The current process just got forked, after parallelism has "
      "already been used. Disabling parallelism to avoid deadlocks...",
      "TOKENIZERS_PARALLELISM=false HF_HUB_ENABLE_HF_TRANSFER=1 HF_HOME=/mnt/hf-cache",
      "hf_hub_download(repo_id='bigscience/bloom-560m', filename='tokenizer.json')",
      "Successfully installed tokenizers-0.15.2 transformers-4.38.2 safetensors-0.4.2",
      // Hashes, ids, digests.
      "sha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae  "
      "model-00001-of-00002.safetensors",
      "2c624232cdd221771294dfbb310aca000a0df6ac8b66b696d90ef06fdefb64a3  vocab.json",
      "run_id: 0b6f5c8e-3d2a-4f1b-9c7e-5a8d2e1f4b3c, trial_id: "
      "7f3c9a21-8e4d-4b6a-a1c2-9d0e5f7b8a63",
      "wandb: Syncing run llama7b-sft-017 (id 3kx9z2ab), view at "
      "https://wandb.ai/alice/llama-sft/runs/3kx9z2ab",
      "request_id=5f1c2d3e4b5a69788796a5b4c3d2e1f0 trace=00-4bf92f3577b34da6a3ce929d0e0e4736-"
      "00f067aa0ba902b7-01",
      "[I 2026-11-29 10:23:15.123 ServerApp] Kernel started: "
      "1c9f7e4a-2b3d-4e5f-8a6b-7c8d9e0f1a2b, name: python3",
      "NCCL INFO comm 0x55d4c6a0f2b0 rank 0 nranks 8 cudaDev 0 busId 18000 commId "
      "0x8b9c2f3a1e5d4c7b - Init COMPLETE",
      "NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7",
      "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
      "NCCL WARN NET/IB : Got async event : port error",
      "NCCL_IB_HCA=mlx5_0,mlx5_1 NCCL_SOCKET_IFNAME=eth0 CUDA_VISIBLE_DEVICES=0,1,2,3",
      "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
      "bus.",
      // git, docker, pip, shells.
      "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
      "HEAD is now at 1a2b3c4 Fix tokenizer padding for batched generation",
      "Resolved https://github.com/huggingface/transformers.git to commit "
      "9fceb02d0ae598e95dc970b74767f19372d61af8",
      "git clone git@github.com:alice/llama-sft.git && cd llama-sft",
      "Pulling image \"nvcr.io/nvidia/pytorch:24.01-py3\"",
      "Digest: sha256:3f9b8c2e1d4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c",
      "docker pull nvcr.io/nvidia/pytorch@sha256:"
      "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
      "Status: Downloaded newer image for ghcr.io/alice/trainer:sha-4f2e1d7",
      "export PWD=/home/alice/llama-sft",
      "OLDPWD=/home/alice PWD=/home/alice/runs SHELL=/bin/bash",
      "cwd: /home/alice/llama-sft, python: /opt/conda/bin/python3.10",
      // Jupyter without a token.
      "[I 2026-11-29 10:23:15.123 ServerApp] Jupyter Server 2.14.0 is running at:",
      "[I 2026-11-29 10:23:15.124 ServerApp] http://gpu-node-07:8888/lab",
      "[I 2026-11-29 10:23:15.125 ServerApp] Serving notebooks from local directory: "
      "/home/alice",
      "[W 2026-11-29 10:23:16.002 ServerApp] No web browser found: Error('could not locate "
      "runnable browser').",
      "[I 2026-11-29 10:24:01.777 ServerApp] 302 GET /tree?path=runs%2Fllama7b (10.0.3.1) 0.61ms",
      // Infrastructure, URLs, names that only mention a secret.
      "Connecting to http://10.0.3.17:8080/metrics and postgres://db.internal:5432/mlflow",
      "ssh://git@github.com:22/alice/llama-sft.git fetched",
      "sshd[4121]: Accepted publickey for alice from 10.0.3.5 port 51234 ssh2: RSA "
      "SHA256:Xk3vQ9r2mP7tL0wY5zA8bN4cF6hJ1dGeUoIiKwqs0aB",
      "password_file: /etc/mlflow/db_password.txt",
      "secret_name: hf-token-secret, api_key_id: 7c9e6679",
      "token_count: 8192, token_ids_file: /data/tokens.bin",
      "Authorization failed for user alice: please log in again",
      "wandb: Appending key for api.wandb.ai to your netrc file: /root/.netrc",
      "x-request-id: 5f1c2d3e-4b5a-6978-8796-a5b4c3d2e1f0",
      "Using cache found in /root/.cache/torch/hub/pytorch_vision_main",
      "s3://ml-datasets/pile/train/shard-00017.tar uploaded (1.2 GiB, etag "
      "\"9b2cf535f27731c974343645a3985328\")",
      "disk-usage /mnt/ckpt 71% task-20261129-0017 mask-rcnn-r50 desk-bench",
  };
}

std::vector<std::string> OrdinaryJsonDocuments() {
  return {
      R"({"@timestamp":"2026-11-29T10:23:15.123Z","message":"step 1200 loss 0.4312 tokens/s 152334","max_tokens":2048,"num_tokens":512,"tokenizer":"bert-base-uncased"})",
      R"({"message":"generation config","pad_token_id":0,"eos_token":"</s>","bos_token":"<s>","token_type":"bearer","special_tokens":{"unk_token":"<unk>","mask_token":"[MASK]"}})",
      R"({"message":"shell","PWD":"/home/alice/runs","OLDPWD":"/home/alice","env":{"TOKENIZERS_PARALLELISM":"false","CUDA_VISIBLE_DEVICES":"0,1"}})",
      R"({"message":"checkpoint saved","sha256":"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae","git_commit":"9fceb02d0ae598e95dc970b74767f19372d61af8","run_id":"0b6f5c8e-3d2a-4f1b-9c7e-5a8d2e1f4b3c"})",
      R"({"message":"secret metadata","password_file":"/etc/db_password.txt","api_key_id":"7c9e6679","secret_name":"hf-token-secret","token_count":8192,"lr":1.50,"warmup":1e3})",
      R"({"log":{"level":"INFO","file":{"path":"/home/alice/runs/llama7b-sft-017/train.log"},"offset":81234},"host":{"name":"gpu-node-07"},"tags":["train","tokens/s"],"loss":[0.5,0.25,null,true]})",
  };
}

namespace {

PlantedSecret Plant(std::string rule, std::string secret, std::string before,
                    std::string after = "") {
  std::string text = before + secret + after;
  return PlantedSecret{std::move(rule), std::move(secret), std::move(text)};
}

}  // namespace

std::vector<PlantedSecret> PlantedSecrets() {
  const std::string rsa_body =
      "MIIEowIBAAKCAQEA3mSCHqwL9BwAn/9aF+jBGkXjOlJD5VUGlrQwAr1IVHaE+s1A\n"
      "5M6CIRba8vDFbfAGYMds26p5wVgK/ZUlxHAiO2iL/EPGIwBAPsyVyAt/hZrCrKta\n";
  const std::string pkcs8_body =
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjc3cSh40iK4lzmUnGXAqb4+A2\n"
      "INcAk+HvS0g9DjUsZTmzFYrFwqV6VPT8Mg7jWlc0rPfdsZEuRMb8JEQWz3/ZGNoI\n";
  return {
      // PEM / PGP private key blocks, masked whole.
      Plant("private_key", rsa_body, "-----BEGIN RSA PRIVATE KEY-----\n",
            "-----END RSA PRIVATE KEY-----"),
      Plant("private_key", pkcs8_body, "key material: -----BEGIN PRIVATE KEY-----\n",
            "-----END PRIVATE KEY----- (loaded)"),
      Plant("private_key", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n", "-----END OPENSSH PRIVATE KEY-----\n"),
      Plant("private_key", "lQOYBGVnWx8BCADRh3nB2p9kLmQ4sT7vX1zYcA6fE8gH0jK\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n",
            "=Xk3v\n-----END PGP PRIVATE KEY BLOCK-----"),
      // A line cut short: the block is masked to the end.
      Plant("private_key", "MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49",
            "-----BEGIN EC PRIVATE KEY-----\n"),
      // JWT, bare and as a bearer token.
      Plant("jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImlhdCI6MTc2NDQ2MDgwMCwic2Nv"
            "cGUiOiJ0cmFpbiJ9.QVn_PY_v-nVNJKyC0fkAqd1c1D7kJWwME5uAsga9FVo",
            "session cookie id_token=", "; Path=/"),
      Plant("jwt",
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IiLCJleHAiOjE3OTU5NDc3OTV9.bXlfc2lnbmF0dXJlX2Zvcl9"
            "ib2JfMjAyNg",
            "Authorization: Bearer "),
      // Cloud and SaaS token formats, anywhere in a line.
      Plant("aws_access_key_id", "AKIAIDVWTFKTANGPVYQE", "aws configure set aws_access_key_id "),
      Plant("aws_access_key_id", "ASIA6BEMZUMLENMWFQTR", "assumed role, temporary key ",
            " expires in 3600s"),
      Plant("github_token", "ghp_B4r6bSr0pFBOPCWBRDFOxEzf5FJtRBZRAJyu",
            "git remote set-url origin https://", "@github.com/alice/llama-sft.git"),
      Plant("github_token", "gho_5BKaCKvsYFJGufE0w6HjwXmDMwmctuUHtirN", "oauth token ", " granted"),
      Plant("github_token", "ghu_LU09X0fmnR7n5FdmueGDmblocOKFm7BEKAT3", "user-to-server: "),
      Plant("github_token", "ghs_TqFZA7oIzMc0pYJzvItJ17FO6bBlKu8y0Xx7",
            "GITHUB_TOKEN=", " gh release upload"),
      Plant("github_token", "ghr_gslTkmH3cmPtbx0Bhc2FyLPvMGvr2Ka1YsHz", "refresh(", ")"),
      Plant("github_token",
            "github_pat_FXQf1pjwaSyrEGVkOPntkr_ZeZsRmorPmoE5TZ9dliic8dCO9DDTZlJf0Dju5aSqdWssjo12ft"
            "Qyz0HLEv",
            "using PAT '", "' for pip install"),
      Plant("huggingface_token", "hf_N7TbK47gQcpobB2OlatoaybhHitbwJuQ5g", "export HF_TOKEN="),
      Plant("huggingface_token", "hf_KeiOLS4GMtbtK4FEzkQxYISTCguXPeGq0e",
            "huggingface-cli login --token ", " --add-to-git-credential"),
      Plant("openai_key", "sk-KoNy5cQ0uyVsOYYDVJXRhovvuUvBEwJSuBVKpbYeZjCpQrWH",
            "export OPENAI_API_KEY=\"", "\""),
      Plant("openai_key",
            "sk-proj-hueUa1GnoBcMqHaWB8m25yX9H3bJP-Nih7TO7DKDQBgjrdBG1ywc7zGVmbELfGmFL2JO",
            "openai.api_key = '", "'"),
      Plant("slack_token", "xoxb-834346941534-3950754303408-jqFcf9tXprF5AyRaiC92All9",
            "slack notifier <", "> posting to #training"),
      Plant("slack_token",
            "xoxp-926458894847-025572654632-5660899682646-114467833b3f847dbfbf0a22b3930edb",
            "SLACK_USER=", ";"),
      Plant("google_api_key", "AIzaku_NlE9FXDc-yreIogLe3pOsxVZSo0jR2z3",
            "https://generativelanguage.googleapis.com/v1/models?key=", "&alt=json"),
      Plant("stripe_key", "sk_live_RK5PcXxFSs25g3jFm25ECrug", "billing client (", ")"),
      Plant("stripe_key", "rk_live_cYq8YYUt3pnMWdKNHpZhfuNI", "restricted key: ", ", scope=read"),
      // user:password in URLs; user and host stay.
      Plant("url_credentials", "S3cr3tPassw0rd2026",
            "mlflow backend postgres://mlflow:", "@db.internal:5432/mlflow"),
      Plant("url_credentials", "p4ssW0rd-oCCxKr1vIWc7",
            "pip index https://alice:", "@pypi.internal/simple"),
      Plant("url_credentials", "kiuf6srtBk5JLCKkfDXe", "broker redis://:", "@10.0.3.9:6379/0"),
      Plant("url_credentials", "XISADWcGNkO7rsVT7zvw",
            "redirect to /login?next=https%3A%2F%2Fbob%3A", "%40gpu-node-07%3A8888%2Flab"),
      // Jupyter tokens in query strings, plain and percent-encoded.
      Plant("jupyter_token", "0c722e11346231bf8da596117f292521cac6c9930279e94b",
            "[I 2026-11-29 10:23:15.124 ServerApp] http://gpu-node-07:8888/lab?token="),
      Plant("jupyter_token", "f2686cfdd971c684583c41b6be5bedf95140800421611d95",
            "    http://127.0.0.1:8888/tree?path=runs&token=", "&kernel=python3"),
      Plant("jupyter_token", "332a30a983694d1b428f3e50e86c2c5fa3c6439edc106b45",
            "GET /hub/login?next=%2Fuser%2Falice%2Flab%3Ftoken%3D", " 302"),
      Plant("jupyter_token", "a552abb45deb93f1f4aefbb6e04f477235a2d4247b962311",
            "open \"http://localhost:8888/?token=", "\" in a browser"),
      // Jupyter's `token: ...` line is an assignment.
      Plant("secret_assignment", "b975644c90a95c79001b15d5df0c9de19b93f7d8490cabec",
            "    token: ", ""),
      // Authorization and API-key headers: the scheme and header name stay.
      Plant("authorization_header", "iYONymwpea8HIbvp-Xp_Z2Z4RTggVK3tK", "> Authorization: Bearer ",
            "\n> Accept: */*"),
      Plant("authorization_header", "YWxpY2U6bGR5V29XNlU5QXI5Vkg=", "Authorization: Basic "),
      Plant("authorization_header", "dcf9314f36c34cb8d68272726b12d922", "authorization: ApiKey ",
            " (from env)"),
      Plant("authorization_header", "e42b6c2cf1ec189a6a82f3dad01d194e",
            R"(headers={"Authorization": "Token )", R"(", "Accept": "application/json"})"),
      Plant("authorization_header", "Ql5yDOgv1YRb6J2IxrS5hmEZ", "Proxy-Authorization: Basic "),
      Plant("api_key_header", "6f3391fa920a5db4a426a881d782969d", "X-Api-Key: "),
      Plant("api_key_header", "56514fe253520d3ee19bca4f699582c7",
            "curl -H 'x-auth-token: ", "' https://api.internal/v1/jobs"),
      Plant("api_key_header", "1bacb0cd1ddab5e3dd716687440cb663", R"({"X-Wandb-Key": ")",
            R"(", "User-Agent": "wandb/0.16"})"),
      // A bare bearer token, without an Authorization header.
      Plant("bearer_token", "QPoLYTR30hnKpIvCfppH.iklMTonIHJVCqS2S793l", "retrying with Bearer ",
            " after 401"),
      // NAME=value / NAME: value / "NAME": "value" / export NAME=value.
      Plant("secret_assignment", "756c4cf32cc5ea563072475f5793309f433d4f23",
            "export WANDB_API_KEY="),
      Plant("secret_assignment", "qiJ5PqKfUg7z1xtn1DjaiZ9sHB7QziKzxgErUFUc",
            "AWS_SECRET_ACCESS_KEY=", " aws s3 sync s3://ml-datasets /data"),
      Plant("secret_assignment", "QKE9PDXl*PO#j*Wk", R"(config: {"db_password": ")", R"("})"),
      Plant("secret_assignment", "BO7wEW8BmIaXqphP7ZLW", "password: "),
      Plant("secret_assignment", "eKrrmZqGrSC8NJDWBegb", "Namespace(lr=0.001, api_key='",
            "', seed=42)"),
      Plant("secret_assignment", "lXFqdhvhw9HednsTNqOZ",
            "oauth client_secret=", " client_id=trainer"),
      Plant("secret_assignment", "SbV5KCSZRibY57nmaMwf",
            "MINIO_ACCESS_KEY=", " MINIO_REGION=us-east-1"),
      Plant("secret_assignment", "aaBPU3tYlvQEAA9f1pMU", "ssh: private_key: \"", "\""),
      Plant("secret_assignment", "FWdceuiYqHazaKa3wGbH", "ldap bind passwd=", " uid=alice"),
      Plant("secret_assignment", "RbVqFDVOkcgSf6tBeyN9", "DB_PWD=", " ./migrate.sh"),
      Plant("secret_assignment", "800RKU0gau3Af1Afo73a", "comet apikey: "),
      Plant("secret_assignment", "NRGeRHB49oNefjh5ctZ6", "gcloud credential=", " project=ml"),
      Plant("secret_assignment", "bGHW3gUwuOnpuYN1Hruz", "clientSecret = \"", "\";"),
      Plant("secret_assignment", "qzLS6XPNquB77amiSjon", "MLFLOW_TRACKING_PASSWORD='", "'"),
      Plant("secret_assignment", "qpzrFw4jvyrh2R9GGE1H", "--hf-token=", " --push-to-hub"),
      // Percent-encoded assignments (a form body or a logged query string).
      Plant("secret_assignment", "VNhwi1IswvCcUzola21D",
            "POST /login body=user%3Dalice%26password%3D", " 200"),
      Plant("secret_assignment", "p%40ss%21iEBP5lIcxC4jHiHx",
            "GET /api/v1/run?user=alice&password=", " 200"),
  };
}

}  // namespace dashcam::testing
