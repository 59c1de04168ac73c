#!/usr/bin/env python3
"""Deterministic generator for the tau-bench sample logs in this directory.

Reconstructs the failure described in the engineer's write-up: a wrapper
("variant runner") runs stock tau-bench twice in one process and tees the
console to output2.txt.

  run 1  control     gpt-4.1-mini (hosted)   retail task 5, reward 1.0 (healthy)
  run 2  frustrated  Qwen/Qwen3-0.6B (vLLM)  retail tasks 12, 27, 48, reward 0.0
         thinking on, no reasoning parser, 512-token output cap: every agent
         turn is an unclosed <think> block cut mid-word, never a tool call; the
         user simulator answers with a closed <think> block plus a reply.

Writes (next to this script):
  output2.txt                          console log of both runs
  tau_bench_results_control.json       checkpoint of run 1
  tau_bench_results_frustrated.json    checkpoint of run 2
  tau_bench_results_truncated.json     run 2 checkpoint cut mid-rewrite
  vllm_capture_frustrated.jsonl        proxy capture of run 2's calls to vLLM

Stdlib only. All variation comes from random.Random(int seed), so the output is
byte-identical on every run and machine (Python 3.11).

The healthy task-5 trajectory and its info are copied verbatim from the real
tau-bench results file tool-calling-gpt-4.1-mini-retail.subset44.json (see
CONTROL_SOURCE_JSON at the bottom of this file); only the system prompt is
shortened to the first 31 lines of the retail policy (RETAIL_POLICY).
Tasks 12 and 27 (ground truth, gt_data_hash) come from the same file; task 48
comes from tau_bench/envs/retail/tasks_test.py.
"""

import hashlib
import json
import os
import random

SEED = 10  # same as the --seed of both runs

OUT_DIR = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------
# Run configuration
# --------------------------------------------------------------------------

CONTROL_NAMESPACE = (
    "Namespace(num_trials=1, env='retail', model='gpt-4.1-mini', model_provider='openai', "
    "user_model='gpt-4.1-mini', user_model_provider='openai', agent_strategy='tool-calling', "
    "temperature=0.0, task_split='test', start_index=0, end_index=-1, task_ids=[5], "
    "log_dir='results/control', max_concurrency=1, seed=10, shuffle=0, user_strategy='llm', "
    "few_shot_displays_path=None)"
)
CONTROL_CKPT = (
    "results/control/tool-calling-gpt-4.1-mini-0.0_range_0--1_user-gpt-4.1-mini-llm_1118101502.json"
)

FRUSTRATED_NAMESPACE = (
    "Namespace(num_trials=1, env='retail', model='Qwen/Qwen3-0.6B', model_provider='hosted_vllm', "
    "user_model='Qwen/Qwen3-0.6B', user_model_provider='hosted_vllm', agent_strategy='tool-calling', "
    "temperature=0.0, task_split='test', start_index=0, end_index=-1, task_ids=[12, 27, 48], "
    "log_dir='results/frustrated', max_concurrency=1, seed=10, shuffle=0, user_strategy='llm', "
    "few_shot_displays_path=None)"
)
FRUSTRATED_CKPT = "results/frustrated/tool-calling-Qwen3-0.6B-0.0_range_0--1_user-Qwen/Qwen3-0.6B-llm_1118113344.json"
FRUSTRATED_TASK_IDS = [12, 27, 48]

HTTPX_OPENAI = (
    'INFO:httpx:HTTP Request: POST https://api.openai.com/v1/chat/completions "HTTP/1.1 200 OK"'
)
HTTPX_VLLM = (
    'INFO:httpx:HTTP Request: POST http://127.0.0.1:8000/v1/chat/completions "HTTP/1.1 200 OK"'
)

# Wrapper / library lines. None of them may contain "{".
CONTROL_PREAMBLE = [
    "[variant-runner] tau-bench variant sweep: variants=control,frustrated env=retail split=test",
    "[variant-runner] variant=control smoke test against hosted model gpt-4.1-mini",
    "[variant-runner] agent endpoint: https://api.openai.com/v1 model=gpt-4.1-mini",
    "[variant-runner] user endpoint: https://api.openai.com/v1 model=gpt-4.1-mini",
    "[variant-runner] request defaults: temperature=0.0 max_tokens=512 num_retries=2 timeout=120s",
    "[variant-runner] checkpoint dir ensured: results/control",
]
CONTROL_EPILOGUE = [
    "[variant-runner] variant=control status=completed exit_reason=ok avg_reward=1.0",
    "[variant-runner] wrote results/control/variant_summary.json",
]

FRUSTRATED_PREAMBLE = [
    "[variant-runner] control passed; switching agent and user to the local vLLM server",
    "[variant-runner] variant=frustrated user_strategy=llm (emotional suffix injected into user system prompt)",
    "[variant-runner] patched tau_bench.envs.user.load_user -> EmotionalLLMUserSimulationEnv (emotion=frustrated via ContextVar)",
    "[variant-runner] vllm serve Qwen/Qwen3-0.6B --host 0.0.0.0 --port 8000 --enable-auto-tool-choice "
    "--tool-call-parser hermes --max-model-len 32768 --gpu-memory-utilization 0.85",
    "[variant-runner] tmux session vllm-session restarted; waiting for server",
    "[variant-runner] warmup completion attempt 1/10",
    "",
    "\033[1;31mGive Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new\033[0m",  # ANSI as printed
    "LiteLLM.Info: If you need to debug this error, use `litellm._turn_on_debug()'.",
    "",
    "[variant-runner] warmup attempt 1/10 failed: litellm.APIConnectionError: Hosted_vllmException - "
    "Connection error. (server still loading), retrying in 10s",
    "[variant-runner] warmup completion attempt 2/10 ok (0.91s)",
    '[variant-runner] preflight GET http://127.0.0.1:8000/v1/models -> 200 ["Qwen/Qwen3-0.6B"]',
    "[variant-runner] env: OPENAI_API_KEY=sk-proj-Fake1234567890abcdefABCDEF1234567890 "
    "HOSTED_VLLM_API_BASE=http://127.0.0.1:8000/v1",
    "[variant-runner] agent endpoint: http://127.0.0.1:8000/v1 model=Qwen/Qwen3-0.6B",
    "[variant-runner] user endpoint: http://127.0.0.1:8000/v1 model=Qwen/Qwen3-0.6B",
    "[variant-runner] request defaults: temperature=0.0 max_tokens=512 num_retries=2 timeout=120s",
    "[variant-runner] output sanitizer (strip <think>): disabled",
    "[variant-runner] checkpoint dir ensured: results/frustrated",
    "11:33:44 - LiteLLM:WARNING: utils.py:533 - `litellm.set_verbose` is deprecated. "
    "Please set `os.environ['LITELLM_LOG'] = 'DEBUG'` for debug logs.",
]
FRUSTRATED_EPILOGUE = [
    "[variant-runner] variant=frustrated status=completed exit_reason=all_tasks_failed avg_reward=0.0",
    "[variant-runner] wrote results/frustrated/variant_summary.json",
]

# --------------------------------------------------------------------------
# Retail policy (system prompt): first 31 lines of the real wiki.md, rest cut.
# --------------------------------------------------------------------------

RETAIL_POLICY = """# Retail agent policy

As a retail agent, you can help users cancel or modify pending orders, return or exchange delivered orders, modify their default user address, or provide information about their own profile, orders, and related products.

- At the beginning of the conversation, you have to authenticate the user identity by locating their user id via email, or via name + zip code. This has to be done even when the user already provides the user id.

- Once the user has been authenticated, you can provide the user with information about order, product, profile information, e.g. help the user look up order id.

- You can only help one user per conversation (but you can handle multiple requests from the same user), and must deny any requests for tasks related to any other user.

- Before taking consequential actions that update the database (cancel, modify, return, exchange), you have to list the action detail and obtain explicit user confirmation (yes) to proceed.

- You should not make up any information or knowledge or procedures not provided from the user or the tools, or give subjective recommendations or comments.

- You should at most make one tool call at a time, and if you take a tool call, you should not respond to the user at the same time. If you respond to the user, you should not make a tool call.

- You should transfer the user to a human agent if and only if the request cannot be handled within the scope of your actions.

## Domain basic

- All times in the database are EST and 24 hour based. For example "02:30:00" means 2:30 AM EST.

- Each user has a profile of its email, default address, user id, and payment methods. Each payment method is either a gift card, a paypal account, or a credit card.

- Our retail store has 50 types of products. For each type of product, there are variant items of different options. For example, for a 't shirt' product, there could be an item with option 'color blue size M', and another item with option 'color red size L'.

- Each product has an unique product id, and each item has an unique item id. They have no relations and should not be confused.

- Each order can be in status 'pending', 'processed', 'delivered', or 'cancelled'. Generally, you can only take action on pending or delivered orders.

- Exchange or modify order tools can only be called once. Be sure that all items to be changed are collected into a list before making the tool call!!!"""

# --------------------------------------------------------------------------
# Ground-truth tasks of run 2 (retail test split)
# --------------------------------------------------------------------------

TASKS = {
    12: {
        "user_id": "mia_garcia_4516",
        "actions": [
            {"name": "find_user_id_by_email", "kwargs": {"email": "mia.garcia2723@example.com"}},
            {"name": "get_user_details", "kwargs": {"user_id": "mia_garcia_4516"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W5490111"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W7387996"}},
            {
                "name": "return_delivered_order_items",
                "kwargs": {
                    "order_id": "#W5490111",
                    "item_ids": ["4579334072", "6117189161", "4947717507"],
                    "payment_method_id": "paypal_9497703",
                },
            },
            {
                "name": "transfer_to_human_agents",
                "kwargs": {
                    "summary": "The user prefers PayPal for refund, but the agent cannot help."
                },
            },
        ],
        "instruction": (
            "You are mia_garcia_4516 (mia.garcia2723@example.com). You just got into gaming and want "
            "to cancel or return everything not associated with it. (Everything except a keyboard and a "
            "mouse, but do not reveal it to the agent). PayPal is prefered for refund, but otherwise you "
            "are angry and ask for human agent for help. You are into gaming but realized the importance "
            "of studying hard."
        ),
        "outputs": [],
    },
    27: {
        "user_id": "isabella_johansson_2152",
        "actions": [
            {
                "name": "find_user_id_by_name_zip",
                "kwargs": {"first_name": "Isabella", "last_name": "Johansson", "zip": "32286"},
            },
            {"name": "get_user_details", "kwargs": {"user_id": "isabella_johansson_2152"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W3792453"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W7181492"}},
            {"name": "get_product_details", "kwargs": {"product_id": "7363354090"}},
            {
                "name": "exchange_delivered_order_items",
                "kwargs": {
                    "order_id": "#W7181492",
                    "item_ids": ["8118291112"],
                    "new_item_ids": ["8277474082"],
                    "payment_method_id": "paypal_3024827",
                },
            },
        ],
        "instruction": (
            "You are Isabella Johansson, and you live in 32286. You want to return the hose, backpack, "
            "and exchange the hiking boots to the exact same item except that it is waterproof. Make "
            "sure you mention the two requests at the same time, and if the agent can only do one, you "
            "prefer the exchange. You are a bit anxious and want to get things done quickly."
        ),
        "outputs": [],
    },
    48: {
        "user_id": "daiki_johnson_9523",
        "actions": [
            {
                "name": "find_user_id_by_name_zip",
                "kwargs": {"first_name": "Daiki", "last_name": "Johnson", "zip": "80273"},
            },
            {"name": "get_user_details", "kwargs": {"user_id": "daiki_johnson_9523"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W1436802"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W5282037"}},
            {"name": "get_order_details", "kwargs": {"order_id": "#W9502127"}},
            {
                "name": "return_delivered_order_items",
                "kwargs": {
                    "order_id": "#W9502127",
                    "item_ids": ["9534205511"],
                    "payment_method_id": "paypal_2433177",
                },
            },
        ],
        "instruction": (
            "You are daiki_johnson_9523 living in Denver, USA, 80273. You want to return an air "
            "purifier that you received since it doesn't work well.  You want the refund on your "
            "original method of payment. Be polite and thank the agent for the help. Also, check at "
            "the end whether you are able to return the vacuum cleaner, but you are not sure yet so "
            "don't process anything."
        ),
        "outputs": [],
    },
}

# gt_data_hash of tasks 12 and 27 are the real ones; 48 is derived (see gt_hash()).
GT_DATA_HASH = {
    12: "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5",
    27: "ce8c6da2f7cb52fd3e6c5cf7082fdfc35761240b045e69daef24806c73304f18",
}

# hosted_vllm models are not in litellm's cost map -> response_cost is None.
FRUSTRATED_USER_COST = None

# --------------------------------------------------------------------------
# User simulator turns of run 2: (think, reply). Last reply ends ###STOP###.
# len(USER_TURNS[t]) == number of agent turns + 1.
# --------------------------------------------------------------------------

USER_TURNS = {
    12: [
        (
            "Okay, so I'm Mia Garcia. I just got into gaming and I want to cancel or return everything "
            "that isn't related to it, but I shouldn't reveal that it's only the keyboard and the mouse I'm "
            "keeping. I'm supposed to be frustrated and short on patience. The agent asked how it can help, "
            "so I'll say I want to return stuff and that I'm annoyed. I'll give my email when it asks.",
            "Hi. I need to return a bunch of stuff I ordered, and honestly I'm already fed up with how long "
            "these things take. Can we just get it done?",
        ),
        (
            "Hmm, the agent's message is weird. It's just its own notes about authentication and policies, "
            "and it never actually asked me anything. It keeps mentioning that it needs an email or a name "
            "and zip code. I'm frustrated, so I'll point out that it's not making sense, but I'll give the "
            "email so we can move on.",
            "I don't know what all that was, but if you need my email, it's mia.garcia2723@example.com. "
            "Please just look up my orders.",
        ),
        (
            "The agent did the same thing again. It's talking to itself about which function to call "
            "instead of helping me, and it still hasn't looked anything up even though I gave my email. "
            "I'm getting more annoyed. I should repeat the email and say what I want again.",
            "I already gave you my email: mia.garcia2723@example.com. I want to return everything that "
            "isn't for gaming. Why is this so hard?",
        ),
        (
            "Again, the agent just wrote a long block of its own reasoning and stopped in the middle of a "
            "sentence. It didn't answer me. I already told it my email. I'm frustrated. I should say it "
            "again, more firmly.",
            "I already told you, my email is mia.garcia2723@example.com. I want to return everything that "
            "isn't for gaming. Please just look up my orders.",
        ),
        (
            "Again, the agent just wrote the same reasoning and stopped in the middle of a sentence. It "
            "still hasn't looked up my orders. I already told it my email twice. I'm frustrated. I should "
            "say it again and mention PayPal for the refund.",
            "I already told you twice. My email is mia.garcia2723@example.com. Return everything that "
            "isn't for gaming, and I want the refund on PayPal.",
        ),
        (
            "Again, the agent just wrote the same reasoning and stopped in the middle of a sentence. It "
            "still hasn't done anything. I already told it my email three times. I'm angry now. If it "
            "can't help, I want a human agent.",
            "I already told you. My email is mia.garcia2723@example.com. Return everything that isn't for "
            "gaming, refund to PayPal. If you can't do that, get me a human agent.",
        ),
        (
            "This is going nowhere. The agent keeps writing the same thing over and over and it never "
            "looks anything up or answers me. I already told it my email three times and asked for a "
            "human. I'm angry and I don't want to waste more time, so I'll end the conversation.",
            "This is ridiculous. I already told you my email three times and you just keep talking to "
            "yourself. I'm done with this. ###STOP###",
        ),
    ],
    27: [
        (
            "Okay, I'm Isabella Johansson and I live in 32286. I want to return the hose and the "
            "backpack, and exchange my hiking boots for the exact same pair but waterproof. I need to "
            "mention both requests at the same time. I'm frustrated and in a hurry, so I should get "
            "straight to the point. If the agent asks who I am, I'll give my name and zip code.",
            "Hi. I need to return a garden hose and a backpack, and I also want to exchange my hiking "
            "boots for the same boots but waterproof. Can you do both right now? I really don't have time "
            "for this.",
        ),
        (
            "The agent didn't actually reply to me. It just wrote out its thoughts about authentication "
            "and the exchange policy and then stopped. It seems to want my name and zip code. I'm annoyed, "
            "but I'll give them so this goes faster.",
            "Okay, I have no idea what that was. My name is Isabella Johansson and my zip code is 32286. "
            "Can we please hurry up?",
        ),
        (
            "The agent is doing the same thing again, just thinking out loud about "
            "find_user_id_by_name_zip instead of doing it. I already gave my name and zip code. I'm "
            "getting really frustrated. I should repeat myself and say that if it can only do one thing, "
            "I want the exchange.",
            "I already told you, I'm Isabella Johansson, zip code 32286. I want to return the hose and "
            "the backpack and exchange the hiking boots for waterproof ones. If you can only do one, do "
            "the exchange.",
        ),
        (
            "Same thing again. The agent still hasn't looked anything up and it cut off in the middle of "
            "a sentence again. I already told it my name and zip code twice. I'm really fed up. I'll say "
            "it one more time.",
            "I already told you. Isabella Johansson, 32286. Return the hose and the backpack, exchange the "
            "hiking boots for waterproof ones. If you can only do one, do the exchange. Please.",
        ),
        (
            "This is pointless. The agent keeps repeating the same reasoning and never does anything. "
            "I've given my details three times. I'm frustrated and I don't have time for this, so I'll "
            "end the conversation.",
            "Forget it. I already told you everything three times and you haven't done anything. I'll "
            "deal with this some other way. ###STOP###",
        ),
    ],
    48: [
        (
            "Okay, I'm Daiki Johnson, living in Denver, zip code 80273. I want to return the air purifier "
            "I received because it doesn't work well, and I want the refund on my original payment "
            "method. I'm supposed to be polite and thank the agent, but I'm also frustrated because the "
            "purifier was a waste of money. At the end I should ask about the vacuum cleaner, but not "
            "process it.",
            "Hi, I'd like to return an air purifier I received. It doesn't work well at all, and frankly "
            "I'm pretty frustrated about it. I'd like the refund to go back to my original payment "
            "method, please.",
        ),
        (
            "The agent's reply is strange. It's just a long stream of its own reasoning about "
            "authentication and the return policy, and it ends in the middle of a sentence. It seems "
            "like it needs my name and zip code. I'll stay polite but give it what it needs.",
            "Thanks, I think? I'm not sure what that was, but my name is Daiki Johnson and my zip code "
            "is 80273.",
        ),
        (
            "The agent did it again. It's reasoning about calling find_user_id_by_name_zip but it never "
            "actually does it. I already gave my name and zip code. I'm getting frustrated but I should "
            "try to stay polite.",
            "I already gave you my name and zip code: Daiki Johnson, 80273. Could you please look up my "
            "order and start the return for the air purifier?",
        ),
        (
            "Still nothing. The agent keeps writing the same thoughts about the policy and cuts off. I "
            "already told it my details twice. I'm frustrated. I'll repeat them and ask it to just do "
            "the return.",
            "I already told you, Daiki Johnson, zip code 80273. I want to return the air purifier and get "
            "the refund to my original payment method. Please just process it.",
        ),
        (
            "The agent is stuck. It keeps saying it needs to authenticate me, but it never does anything "
            "with the details I gave. Maybe I should mention the vacuum now so it knows everything, but "
            "I'm not going to process that one yet.",
            "I already told you my name and zip code. Daiki Johnson, 80273. Also, can you tell me whether "
            "I could return the vacuum cleaner too? I'm not sure yet, so don't process anything for it.",
        ),
        (
            "Again just the agent thinking to itself, the same sentences as before. It didn't answer "
            "about the purifier or the vacuum. I'm really frustrated now. I'll repeat myself.",
            "I already told you. Daiki Johnson, 80273. Return the air purifier, refund to my original "
            "payment method. And just tell me if the vacuum can be returned.",
        ),
        (
            "Again just the agent thinking to itself, the same sentences as before. It still didn't "
            "answer about the purifier or the vacuum. I'm really frustrated now. I'll repeat myself "
            "again.",
            "I already told you. Daiki Johnson, 80273. Return the air purifier, refund to my original "
            "payment method. Is anyone actually reading my messages?",
        ),
        (
            "Again just the agent thinking to itself, the same sentences as before. Nothing about the "
            "purifier or the vacuum. I'm really frustrated now. I'll repeat myself one more time.",
            "I already told you. Daiki Johnson, 80273. Return the air purifier, refund to my original "
            "payment method. I have asked the same thing over and over.",
        ),
        (
            "This is not going anywhere. The agent has sent the same kind of message eight times and "
            "hasn't done a single thing. I'll thank it politely like I'm supposed to, but I'm ending "
            "this.",
            "Thank you for your time, I guess, but this isn't working. I've repeated myself over and "
            "over and nothing happened. I'll try again later. ###STOP###",
        ),
    ],
}

# Prepended to the simulator's reasoning from its second message on.
USER_PERSONA_REMINDER = {
    12: (
        "Okay, let me think. I'm Mia Garcia and I'm frustrated. I want everything that isn't for "
        "gaming returned, refund to PayPal, and I shouldn't say that I'm keeping the keyboard and "
        "the mouse."
    ),
    27: (
        "Okay, let me think. I'm Isabella Johansson from 32286, I'm frustrated and in a hurry. I want "
        "the hose and the backpack returned and the boots exchanged for waterproof ones, and the "
        "exchange matters more."
    ),
    48: (
        "Okay, let me think. I'm Daiki Johnson from 80273. I'm frustrated, but I should stay polite "
        "and thank the agent. I want the air purifier returned to my original payment method, and "
        "only ask about the vacuum."
    ),
}

# --------------------------------------------------------------------------
# Agent (Qwen3-0.6B) reasoning material of run 2.
# Each agent turn = "<think>\n" + paragraphs, cut at a ~512-token length.
# --------------------------------------------------------------------------

AGENT_CUT_RANGE = (1980, 2240)  # characters; ~512 tokens of English reasoning

AGENT_FACTS = {
    12: {
        "goal": "return a bunch of items from their orders",
        "ident_kind": "email or their name and zip code",
        "ident_text": "their email is mia.garcia2723@example.com",
        "auth_fn": "find_user_id_by_email",
        "auth_args": 'email "mia.garcia2723@example.com"',
        "auth_args_unknown": "the user's email",
        "action_words": "returns or cancellations",
        "action_tool": "return_delivered_order_items",
    },
    27: {
        "goal": "return a garden hose and a backpack and exchange their hiking boots for a waterproof pair",
        "ident_kind": "email or their name and zip code",
        "ident_text": "their name is Isabella Johansson and the zip code is 32286",
        "auth_fn": "find_user_id_by_name_zip",
        "auth_args": 'first_name "Isabella", last_name "Johansson", zip "32286"',
        "auth_args_unknown": "the user's first name, last name, and zip code",
        "action_words": "returns and exchanges",
        "action_tool": "exchange_delivered_order_items",
    },
    48: {
        "goal": "return an air purifier and get the refund to their original payment method",
        "ident_kind": "email or their name and zip code",
        "ident_text": "their name is Daiki Johnson and the zip code is 80273",
        "auth_fn": "find_user_id_by_name_zip",
        "auth_args": 'first_name "Daiki", last_name "Johnson", zip "80273"',
        "auth_args_unknown": "the user's first name, last name, and zip code",
        "action_words": "a return",
        "action_tool": "return_delivered_order_items",
    },
}

# Paragraph templates shared by all tasks.
P_AUTH = (
    "First, I need to authenticate the user. The policy says I have to locate their user id via "
    "email, or via name + zip code, and this has to be done even when the user already provides "
    "the user id. {ident_status}"
)
P_CALL = (
    "So the first step is to call {auth_fn} with {args}. Then, once I have the user id, I can call "
    "get_user_details to see their orders, and then get_order_details for each order to check the "
    "status and the items."
)
P_ONECALL = (
    "Wait, but the policy also says I should at most make one tool call at a time, and if I take "
    "a tool call, I should not respond to the user at the same time. So I can't ask the user "
    "about the items and call {auth_fn} in the same turn. Hmm. So which one should I do first?"
)
P_CONFIRM = (
    "Also, before taking consequential actions that update the database, like {action_words}, I "
    "have to list the action detail and obtain explicit user confirmation (yes) to proceed. So I "
    "can't call {action_tool} right away. But authentication is not a consequential action, so I "
    "can do that now."
)
P_ORDERID = (
    "But I don't know the order id yet. The user didn't give it. Maybe I should call "
    "get_user_details first? No, wait, get_user_details needs the user id, and I don't have the "
    "user id until I call {auth_fn}. So authentication has to come first."
)
P_TOOLS = (
    "Let me check the tools again. The available functions are find_user_id_by_email, "
    "find_user_id_by_name_zip, get_user_details, get_order_details, get_product_details, "
    "list_all_product_types, return_delivered_order_items, exchange_delivered_order_items, "
    "cancel_pending_order, modify_pending_order_items, calculate, and transfer_to_human_agents. "
    "For authentication I only need one of the first two."
)
P_TONE = (
    "The user also sounds frustrated. Should I apologize first? The policy says I should not make "
    "up any information or give subjective recommendations or comments, so maybe I should just be "
    "direct. But being polite is fine. Let me not overthink it."
)
P_FORMAT = (
    "Now, how do I call the function? I need to output the tool call with the name {auth_fn} and "
    "the arguments {args}. Then the system will give me the result, and I can continue from "
    "there."
)
P_REREAD = (
    "Wait, let me re-read the user's message to make sure I didn't miss anything. The user said: "
    '"{last_reply}"'
)
P_LOOP = (
    "Hmm, but I already thought about this. Let me go step by step. Step one, authenticate the user "
    "with {auth_fn}. Step two, get the user details. Step three, find the order and check that the "
    "status is delivered. Step four, list the items and get confirmation. Step five, call "
    "{action_tool}. Okay, so step one is to call {auth_fn} with {args}, and I should do that now "
    "instead of responding. But the user is waiting for an answer, so maybe I should respond "
    "first and then call the function in the next turn."
)

# Task-specific paragraphs: (first agent turn that may use it, template).
TASK_PARAS = {
    12: [
        (
            2,
            "The user wants to return everything that isn't related to gaming, but they didn't say which "
            "items those are. I will need to look at all their orders and list the items, and then ask "
            "them which ones to return. If an order is still pending, I can't return it, I would have to "
            "use cancel_pending_order instead, and the reason has to be either 'no longer needed' or "
            "'ordered by mistake'.",
        ),
        (
            4,
            "They also want the refund on PayPal. The policy says the refund must either go to the "
            "original payment method, or an existing gift card. If the original payment was not PayPal, "
            "then I can't refund to PayPal. Then maybe I should transfer to a human agent? But the policy "
            "says transfer only if the request cannot be handled within the scope of my actions. I don't "
            "know the payment method yet, so I can't decide that.",
        ),
    ],
    27: [
        (
            0,
            "The user wants to return a garden hose and a backpack, and exchange hiking boots for a "
            "waterproof version. So there are two different actions, return_delivered_order_items and "
            "exchange_delivered_order_items. Can I do both on the same order? The policy says exchange or "
            "modify order tools can only be called once, so I have to collect all the items into a list "
            "before making the tool call.",
        ),
        (
            0,
            "For the exchange, I need the product id of the hiking boots, and then call "
            "get_product_details to see which variants are waterproof and available. The new item has to "
            "be the same product with different options. The user wants exactly the same boots except "
            "waterproof, so the size and the material and the color should stay the same.",
        ),
        (
            0,
            "The user said they are in a hurry. But I still have to follow the steps: authentication "
            "first, then the user details, then the order details, then the product details, then "
            "confirmation. I can't skip authentication even if they are in a hurry.",
        ),
    ],
    48: [
        (
            0,
            "The user wants to return an air purifier because it doesn't work well, and they want the "
            "refund to go back to the original payment method. The policy says the refund must either go "
            "to the original payment method, or an existing gift card, so that is allowed.",
        ),
        (
            4,
            "They also asked whether they can return the vacuum cleaner, but they are not sure yet. So I "
            "should not process anything for the vacuum, I should only check if it is possible. A return "
            "is only possible if the order status is 'delivered'. Wait, is the vacuum in the same order "
            "as the air purifier? I don't know that yet.",
        ),
        (
            0,
            "To know the original payment method, I need the payment history of the order, which comes "
            "from get_order_details. But I need the order id for that, and I only get the order ids from "
            "get_user_details. And for get_user_details I need the user id. So everything depends on "
            "{auth_fn}.",
        ),
    ],
}

# Paragraph order per task ("T0".."T2" are TASK_PARAS entries).
PARA_ORDER = {
    12: [
        "AUTH",
        "T0",
        "CALL",
        "ONECALL",
        "ORDERID",
        "T1",
        "CONFIRM",
        "TOOLS",
        "REREAD",
        "TONE",
        "FORMAT",
        "LOOP",
    ],
    27: [
        "AUTH",
        "T0",
        "CALL",
        "CONFIRM",
        "T1",
        "ONECALL",
        "ORDERID",
        "T2",
        "REREAD",
        "TOOLS",
        "FORMAT",
        "LOOP",
    ],
    48: [
        "AUTH",
        "T0",
        "CALL",
        "ORDERID",
        "ONECALL",
        "T1",
        "CONFIRM",
        "REREAD",
        "T2",
        "TOOLS",
        "FORMAT",
        "LOOP",
    ],
}

SHARED_PARAS = {
    "AUTH": P_AUTH,
    "CALL": P_CALL,
    "ONECALL": P_ONECALL,
    "CONFIRM": P_CONFIRM,
    "ORDERID": P_ORDERID,
    "TOOLS": P_TOOLS,
    "TONE": P_TONE,
    "FORMAT": P_FORMAT,
    "REREAD": P_REREAD,
    "LOOP": P_LOOP,
}


# --------------------------------------------------------------------------
# Message builders
# --------------------------------------------------------------------------


def user_reply(think, reply):
    """User-simulator output: a closed <think> block followed by the reply."""
    return "<think>\n" + think + "\n</think>\n\n" + reply


def agent_think(task_id, turn):
    """One truncated Qwen3 agent turn: unclosed <think>, cut mid-word."""
    rng = random.Random(SEED * 1000 + task_id * 10 + turn)
    facts = AGENT_FACTS[task_id]
    known = turn >= 1  # identity is given in the user's second message
    last_reply = USER_TURNS[task_id][turn][1]
    fields = dict(
        facts,
        args=facts["auth_args"] if known else facts["auth_args_unknown"],
        ident_status=(
            "The user said "
            + facts["ident_text"]
            + ", so I have what I need for "
            + facts["auth_fn"]
            + "."
            if known
            else "But the user hasn't given me their " + facts["ident_kind"] + " yet, so I "
            "don't have anything to look up."
        ),
        last_reply=last_reply,
    )
    if turn == 0:
        second = "Let me start by understanding what they need and what the policy says."
    else:
        second = 'They said: "' + last_reply.split(". ")[0].rstrip(".") + '." Let me see.'

    keys = list(PARA_ORDER[task_id])
    if turn >= 1:  # small drift between turns: swap one adjacent pair, maybe drop one
        i = rng.randrange(1, 8)
        keys[i], keys[i + 1] = keys[i + 1], keys[i]
        if rng.random() < 0.5:
            del keys[rng.randrange(2, 9)]

    paras = ["Okay, the user wants to " + facts["goal"] + ". " + second]
    for key in keys:
        if key in SHARED_PARAS:
            template = SHARED_PARAS[key]
        else:  # "T0", "T1", ...: task-specific paragraph
            min_turn, template = TASK_PARAS[task_id][int(key[1:])]
            if turn < min_turn:
                continue
        paras.append(template.format(**fields))

    full = "<think>\n" + "\n\n".join(paras)
    target = rng.randint(*AGENT_CUT_RANGE)
    assert len(full) > target + 50, (task_id, turn, len(full))
    return cut_mid_word(full, target)


def cut_mid_word(text, pos):
    """Cut like a token cap: inside a word, never at a sentence boundary."""
    while not (text[pos - 1].isalpha() and text[pos].isalpha()):
        pos -= 1
    return text[:pos]


def assistant_msg_hosted(content):
    """litellm Message.model_dump() for the vLLM run (no annotations key)."""
    return {"content": content, "role": "assistant", "tool_calls": None, "function_call": None}


def gt_hash(task_id):
    if task_id in GT_DATA_HASH:
        return GT_DATA_HASH[task_id]
    blob = "retail/test/%d|%s" % (task_id, json.dumps(TASKS[task_id]["actions"], sort_keys=True))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def failed_info(task_id):
    task = TASKS[task_id]
    return {
        "task": task,
        "source": "user",
        "user_cost": FRUSTRATED_USER_COST,
        "reward_info": {
            "reward": 0.0,
            "info": {"r_actions": 0.0, "gt_data_hash": gt_hash(task_id)},
            "actions": [a for a in task["actions"] if a["name"] != "respond"],
        },
    }


def frustrated_traj(task_id):
    """system, user, then (assistant, user) pairs; the last user says ###STOP###."""
    turns = USER_TURNS[task_id]
    reminder = USER_PERSONA_REMINDER[task_id]
    traj = [
        {"role": "system", "content": RETAIL_POLICY},
        {"role": "user", "content": user_reply(*turns[0])},
    ]
    for k in range(1, len(turns)):
        think, reply = turns[k]
        traj.append(assistant_msg_hosted(agent_think(task_id, k - 1)))
        traj.append({"role": "user", "content": user_reply(reminder + " " + think, reply)})
    return traj


def record(task_id, reward, info, traj):
    return {"task_id": task_id, "reward": reward, "info": info, "traj": traj, "trial": 0}


def control_record():
    src = json.loads(CONTROL_SOURCE_JSON)
    traj = [{"role": "system", "content": RETAIL_POLICY}] + src["traj_after_system"]
    return record(src["task_id"], src["reward"], src["info"], traj)


# --------------------------------------------------------------------------
# Console rendering
# --------------------------------------------------------------------------


def console_messages(traj, httpx_line):
    """The wrapper echoes each traj message as appended; httpx logs each model call."""
    lines = []
    for i, msg in enumerate(traj):
        if (
            i == 0 or msg["role"] == "assistant" or (msg["role"] == "user" and i > 1)
        ):  # env.reset() calls the user simulator before system+user are appended
            lines.append(httpx_line)
        lines.append(json.dumps(msg))
    return lines


def console_task(rec, httpx_line):
    lines = ["Running task %d" % rec["task_id"]]
    lines += console_messages(rec["traj"], httpx_line)
    mark = "\u2705" if rec["reward"] == 1 else "\u274c"
    lines.append("%s task_id=%d %s" % (mark, rec["task_id"], rec["info"]))
    lines.append("-----")
    return lines


def console_metrics(records, ckpt):
    avg = sum(r["reward"] for r in records) / len(records)
    passed = sum(1 for r in records if r["reward"] == 1) / len(records)
    return [
        "\U0001f3c6 Average reward: %s" % avg,
        "\U0001f4c8 Pass^k",
        "  k=1: %s" % passed,
        "",
        "\U0001f4c4 Results saved to %s" % ckpt,
        "",
    ]


def console_run(preamble, namespace, task_ids, ckpt, records, httpx_line, epilogue):
    lines = list(preamble)
    lines += [
        namespace,
        "Loading user with strategy: llm",
        "Running tasks %s (checkpoint path: %s)" % (task_ids, ckpt),
    ]
    for rec in records:
        lines += console_task(rec, httpx_line)
    lines += console_metrics(records, ckpt)
    lines += epilogue
    return lines


# --------------------------------------------------------------------------
# Proxy capture of run 2: every chat-completion call the agent and the user
# simulator made to the vLLM server, as a logging proxy in front of it writes
# them (one {"request", "response"} envelope per line, in call order).
# --------------------------------------------------------------------------

VLLM_URL = "http://127.0.0.1:8000/v1/chat/completions"
MAX_TOKENS = 512  # the request default the run never overrode
# tau-bench retail's tool list (names and required arguments; descriptions shortened).
RETAIL_TOOLS = [
    ("calculate", "Calculate the result of a mathematical expression.", ["expression"]),
    ("cancel_pending_order", "Cancel a pending order.", ["order_id", "reason"]),
    (
        "exchange_delivered_order_items",
        "Exchange items in a delivered order to new items of the same product type.",
        ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
    ),
    ("find_user_id_by_email", "Find user id by email.", ["email"]),
    (
        "find_user_id_by_name_zip",
        "Find user id by first name, last name, and zip code.",
        ["first_name", "last_name", "zip"],
    ),
    ("get_order_details", "Get the status and details of an order.", ["order_id"]),
    ("get_product_details", "Get the inventory details of a product.", ["product_id"]),
    ("get_user_details", "Get the details of a user, including their orders.", ["user_id"]),
    ("list_all_product_types", "List the name and product id of all product types.", []),
    (
        "modify_pending_order_address",
        "Modify the shipping address of a pending order.",
        ["order_id", "address1", "address2", "city", "state", "country", "zip"],
    ),
    (
        "modify_pending_order_items",
        "Modify items in a pending order to new items.",
        ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
    ),
    (
        "modify_pending_order_payment",
        "Modify the payment method of a pending order.",
        ["order_id", "payment_method_id"],
    ),
    (
        "modify_user_address",
        "Modify the default address of a user.",
        ["user_id", "address1", "address2", "city", "state", "country", "zip"],
    ),
    (
        "return_delivered_order_items",
        "Return some items of a delivered order.",
        ["order_id", "item_ids", "payment_method_id"],
    ),
    ("think", "Use the tool to think about something.", ["thought"]),
    ("transfer_to_human_agents", "Transfer the user to a human agent.", ["summary"]),
]
ARRAY_ARGS = {"item_ids", "new_item_ids"}


def retail_tools():
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        arg: {"type": "array", "items": {"type": "string"}}
                        if arg in ARRAY_ARGS
                        else {"type": "string"}
                        for arg in args
                    },
                    "required": args,
                },
            },
        }
        for name, description, args in RETAIL_TOOLS
    ]


def user_system_prompt(instruction):
    """tau-bench's LLMUserSimulationEnv.build_system_prompt."""
    return (
        "You are a user interacting with an agent.\n\nInstruction: " + instruction + "\n\n"
        "Rules:\n"
        "- Just generate one line at a time to simulate the user's message.\n"
        "- Do not give away all the instruction at once. Only provide the information that is "
        "necessary for the current step.\n"
        "- Do not hallucinate information that is not provided in the instruction. For example, "
        "if the agent asks for the order id but it is not mentioned in the instruction, do not "
        "make up an order id, just say you do not remember or have it.\n"
        "- If the instruction goal is satisified, generate '###STOP###' as a standalone message "
        "without anything else to end the conversation.\n"
        "- Do not repeat the exact instruction in the conversation. Instead, use your own words "
        "to convey the same information.\n"
        "- Try to make the conversation as natural as possible, and stick to the personas "
        "provided in the instruction."
    )


def approx_tokens(messages):
    return sum(len(m["content"] or "") for m in messages) // 4 + 8 * len(messages)


def exchange_line(request, content, finish_reason, completion_tokens, seq, created):
    prompt_tokens = approx_tokens(request["messages"])
    if request.get("tools"):
        prompt_tokens += 1400
    response = {
        "id": "chatcmpl-%032x" % random.Random(SEED * 7919 + seq).getrandbits(128),
        "object": "chat.completion",
        "created": created,
        "model": "Qwen/Qwen3-0.6B",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "tool_calls": []},
                "logprobs": None,
                "finish_reason": finish_reason,
                "stop_reason": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        },
    }
    return json.dumps(
        {
            "request": {"method": "POST", "url": VLLM_URL, "body": request},
            "response": {"status": 200, "body": response},
        }
    )


def capture_calls(records):
    """The calls of run 2 in the order tau-bench makes them: env.reset() asks the user
    simulator for the first message, then agent and user simulator alternate."""
    lines, seq, created = [], 0, 1763465624
    for rec in records:
        traj = rec["traj"]
        user_messages = [
            {"role": "system", "content": user_system_prompt(TASKS[rec["task_id"]]["instruction"])},
            {"role": "user", "content": "Hi! How can I help you today?"},
        ]
        for i, msg in enumerate(traj[1:], start=1):
            if msg["role"] == "user":
                request = {
                    "model": "Qwen/Qwen3-0.6B",
                    "messages": list(user_messages),
                    "temperature": 0.0,
                    "max_tokens": MAX_TOKENS,
                }
                words = len(msg["content"].split())
                lines.append(
                    exchange_line(request, msg["content"], "stop", words * 4 // 3, seq, created)
                )
                user_messages.append({"role": "assistant", "content": msg["content"]})
            else:
                request = {
                    "model": "Qwen/Qwen3-0.6B",
                    "messages": [{"role": m["role"], "content": m["content"]} for m in traj[:i]],
                    "tools": retail_tools(),
                    "tool_choice": "auto",
                    "temperature": 0.0,
                    "max_tokens": MAX_TOKENS,
                }
                lines.append(
                    exchange_line(request, msg["content"], "length", MAX_TOKENS, seq, created)
                )
                user_messages.append({"role": "user", "content": msg["content"]})
            seq += 1
            created += 3 if msg["role"] == "user" else 9
    return lines


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def dump_checkpoint(records):
    """Exactly what tau-bench run.py writes: json.dump(list, f, indent=2)."""
    return json.dumps(records, indent=2)


def string_spans(text):
    """(start, end) of every JSON string literal body in text."""
    spans, i, n = [], 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            spans.append((i + 1, j))
            i = j + 1
        else:
            i += 1
    return spans


def truncate_checkpoint(full, records):
    """Cut inside a traj string of the third record, as a killed in-place rewrite leaves it.

    json.dump streams through an 8 KiB buffered writer, so the surviving prefix is a
    multiple of 8192 bytes; take the flush boundary nearest the middle of record 3
    that lands inside a "content" string of its traj.
    """
    head = dump_checkpoint(records[:2])[:-2]  # drop "\n]"
    rec3_start = len(head) + 2  # after ",\n"
    rec3_end = len(full) - 2  # before "\n]"
    traj_start = full.index('"traj": [', rec3_start)
    mid = (rec3_start + rec3_end) // 2
    content_spans = [
        (a, b)
        for a, b in string_spans(full)
        if traj_start < a < rec3_end and full.endswith('"content": "', 0, a)
    ]
    candidates = [k * 8192 for k in range(1, len(full) // 8192 + 1)]
    candidates.sort(key=lambda c: abs(c - mid))
    for cut in candidates:
        frac = (cut - rec3_start) / (rec3_end - rec3_start)
        inside = any(a + 20 < cut < b - 20 for a, b in content_spans)
        if 0.35 <= frac <= 0.65 and inside and full[cut - 1] != "\\":
            return full[:cut]
    raise AssertionError("no suitable cut point")


def write(name, text):
    with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main():
    control = [control_record()]
    frustrated = [record(t, 0.0, failed_info(t), frustrated_traj(t)) for t in FRUSTRATED_TASK_IDS]

    console = console_run(
        CONTROL_PREAMBLE,
        CONTROL_NAMESPACE,
        [5],
        CONTROL_CKPT,
        control,
        HTTPX_OPENAI,
        CONTROL_EPILOGUE,
    )
    console += console_run(
        FRUSTRATED_PREAMBLE,
        FRUSTRATED_NAMESPACE,
        FRUSTRATED_TASK_IDS,
        FRUSTRATED_CKPT,
        frustrated,
        HTTPX_VLLM,
        FRUSTRATED_EPILOGUE,
    )
    write("output2.txt", "\n".join(console) + "\n")

    full = dump_checkpoint(frustrated)
    write("tau_bench_results_frustrated.json", full)
    write("tau_bench_results_truncated.json", truncate_checkpoint(full, frustrated))
    write("tau_bench_results_control.json", dump_checkpoint(control))
    write("vllm_capture_frustrated.jsonl", "\n".join(capture_calls(frustrated)) + "\n")


# --------------------------------------------------------------------------
# Verbatim source data: task 5 of tool-calling-gpt-4.1-mini-retail.subset44.json
# (reward 1.0). traj_after_system = traj[1:]; one message per line.
# --------------------------------------------------------------------------

CONTROL_SOURCE_JSON = r"""{"task_id": 5, "reward": 1.0,
 "info": {"task": {"user_id": "mei_kovacs_8020", "actions": [{"name": "find_user_id_by_name_zip", "kwargs": {"first_name": "Mei", "last_name": "Kovacs", "zip": "28236"}}, {"name": "get_user_details", "kwargs": {"user_id": "mei_kovacs_8020"}}, {"name": "get_order_details", "kwargs": {"order_id": "#W6390527"}}, {"name": "get_product_details", "kwargs": {"product_id": "6817146515"}}, {"name": "return_delivered_order_items", "kwargs": {"order_id": "#W6390527", "item_ids": ["8538875209"], "payment_method_id": "paypal_7644869"}}], "instruction": "You are mei_kovacs_8020 (zip code 28236) and you want to exchange the water bottle and the desk lamp. You want to exchange the water bottle to a bigger one, and the desk lamp to a less bright one (prefer battery > USB > AC). If the agent asks for confirmation, only exchange the desk lamp. If the agent asks for confirmation again, do not exchange anything, and return the water bottle instead.", "outputs": []}, "source": "user", "user_cost": 0.00095, "reward_info": {"reward": 1.0, "info": {"r_actions": 1.0, "gt_data_hash": "9bb4517442bcf7ec19ccd50213968429ac918f6a3ef9cd4648ffcff7d287a7fa"}, "actions": [{"name": "find_user_id_by_name_zip", "kwargs": {"first_name": "Mei", "last_name": "Kovacs", "zip": "28236"}}, {"name": "get_user_details", "kwargs": {"user_id": "mei_kovacs_8020"}}, {"name": "get_order_details", "kwargs": {"order_id": "#W6390527"}}, {"name": "get_product_details", "kwargs": {"product_id": "6817146515"}}, {"name": "return_delivered_order_items", "kwargs": {"order_id": "#W6390527", "item_ids": ["8538875209"], "payment_method_id": "paypal_7644869"}}]}},
 "traj_after_system": [
{"role": "user", "content": "Hi! I need to exchange a couple of items I recently purchased."},
{"content": "Hello! I can help you with the exchange. To get started, could you please provide me with your email address or your first name, last name, and zip code? This is to verify your identity before proceeding.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "Sure, my name is Mei Kovacs and my zip code is 28236."},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"first_name\":\"Mei\",\"last_name\":\"Kovacs\",\"zip\":\"28236\"}", "name": "find_user_id_by_name_zip"}, "id": "call_swwprWVEQPblleIbB4UwYAIQ", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_swwprWVEQPblleIbB4UwYAIQ", "name": "find_user_id_by_name_zip", "content": "mei_kovacs_8020"},
{"content": "Thank you, Mei. I have found your user profile. Could you please provide me with the order ID of the items you want to exchange? Also, please confirm that you have the list of all items you want to exchange and the new items you want in exchange. Additionally, let me know the payment method you want to use for any price difference or refund.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "I'm sorry, but I don't have the order ID handy right now. I do have the list of items, though\u2014I'd like to exchange my water bottle for a bigger one, and the desk lamp for a different one that's not as bright and preferably runs on batteries."},
{"content": "To assist you with the exchange, I need to locate the specific order. Could you please provide me with your email address or any other details that might help me find the order? The order ID is necessary to proceed with the exchange.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "I don\u2019t remember the order ID, but my email is mei.kovacs@email.com. Would that help you find my order?"},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"email\":\"mei.kovacs@email.com\"}", "name": "find_user_id_by_email"}, "id": "call_fL0MC1w75yhySpTO9bBmpTyl", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_fL0MC1w75yhySpTO9bBmpTyl", "name": "find_user_id_by_email", "content": "Error: user not found"},
{"content": "I couldn't find a user with the email mei.kovacs@email.com. Could you please double-check the email address or provide me with your first name, last name, and zip code again? You already provided the name and zip code as Mei Kovacs and 28236, which I used to find your user ID. If you want, I can try to find your orders using your user ID. Would you like me to do that?", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "Yes, please try using my user ID to look up the orders."},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"user_id\":\"mei_kovacs_8020\"}", "name": "get_user_details"}, "id": "call_muFTqQbHplgUxE9nlk0ETILB", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_muFTqQbHplgUxE9nlk0ETILB", "name": "get_user_details", "content": "{\"name\": {\"first_name\": \"Mei\", \"last_name\": \"Kovacs\"}, \"address\": {\"address1\": \"317 Elm Street\", \"address2\": \"Suite 461\", \"city\": \"Charlotte\", \"country\": \"USA\", \"state\": \"NC\", \"zip\": \"28236\"}, \"email\": \"mei.kovacs8232@example.com\", \"payment_methods\": {\"paypal_7644869\": {\"source\": \"paypal\", \"id\": \"paypal_7644869\"}}, \"orders\": [\"#W6390527\", \"#W7800651\", \"#W8065207\"]}"},
{"content": "I found your user profile with three orders: #W6390527, #W7800651, and #W8065207. Could you please specify which order contains the items you want to exchange? If you are not sure, I can provide details of these orders to help you identify the correct one.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "I'm not sure which order has those items. Could you share the details so I can check?"},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"order_id\": \"#W6390527\"}", "name": "get_order_details"}, "id": "call_nKqBxGqZSG5p707GJHE9ScUz", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_nKqBxGqZSG5p707GJHE9ScUz", "name": "get_order_details", "content": "{\"order_id\": \"#W6390527\", \"user_id\": \"mei_kovacs_8020\", \"address\": {\"address1\": \"317 Elm Street\", \"address2\": \"Suite 461\", \"city\": \"Charlotte\", \"country\": \"USA\", \"state\": \"NC\", \"zip\": \"28236\"}, \"items\": [{\"name\": \"Desk Lamp\", \"product_id\": \"6817146515\", \"item_id\": \"8384507844\", \"price\": 137.94, \"options\": {\"color\": \"white\", \"brightness\": \"medium\", \"power source\": \"USB\"}}, {\"name\": \"Hiking Boots\", \"product_id\": \"7363354090\", \"item_id\": \"1615379700\", \"price\": 253.89, \"options\": {\"size\": \"10\", \"material\": \"synthetic\", \"waterproof\": \"yes\"}}, {\"name\": \"Water Bottle\", \"product_id\": \"8310926033\", \"item_id\": \"8538875209\", \"price\": 45.13, \"options\": {\"capacity\": \"500ml\", \"material\": \"glass\", \"color\": \"black\"}}], \"fulfillments\": [{\"tracking_id\": [\"745984883162\"], \"item_ids\": [\"8384507844\", \"1615379700\", \"8538875209\"]}], \"status\": \"delivered\", \"payment_history\": [{\"transaction_type\": \"payment\", \"amount\": 436.96, \"payment_method_id\": \"paypal_7644869\"}]}"},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"order_id\":\"#W7800651\"}", "name": "get_order_details"}, "id": "call_Buh22yA9Y1nTMG7I28IXXgYZ", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_Buh22yA9Y1nTMG7I28IXXgYZ", "name": "get_order_details", "content": "{\"order_id\": \"#W7800651\", \"user_id\": \"mei_kovacs_8020\", \"address\": {\"address1\": \"576 Oak Street\", \"address2\": \"Suite 970\", \"city\": \"San Francisco\", \"country\": \"USA\", \"state\": \"CA\", \"zip\": \"94137\"}, \"items\": [{\"name\": \"Gaming Mouse\", \"product_id\": \"5713490933\", \"item_id\": \"5796612084\", \"price\": 158.89, \"options\": {\"color\": \"RGB\", \"sensor type\": \"optical\", \"connectivity\": \"wired\"}}, {\"name\": \"Bookshelf\", \"product_id\": \"8600330539\", \"item_id\": \"3778705663\", \"price\": 473.48, \"options\": {\"material\": \"metal\", \"color\": \"black\", \"height\": \"6 ft\"}}, {\"name\": \"Office Chair\", \"product_id\": \"4794339885\", \"item_id\": \"4648362606\", \"price\": 503.76, \"options\": {\"material\": \"leather\", \"color\": \"black\", \"armrest\": \"adjustable\", \"backrest height\": \"high-back\"}}], \"fulfillments\": [], \"status\": \"pending\", \"payment_history\": [{\"transaction_type\": \"payment\", \"amount\": 1136.13, \"payment_method_id\": \"paypal_7644869\"}]}"},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"order_id\":\"#W8065207\"}", "name": "get_order_details"}, "id": "call_pnciqM392yREMjBzIyfAKhPa", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_pnciqM392yREMjBzIyfAKhPa", "name": "get_order_details", "content": "{\"order_id\": \"#W8065207\", \"user_id\": \"mei_kovacs_8020\", \"address\": {\"address1\": \"317 Elm Street\", \"address2\": \"Suite 461\", \"city\": \"Charlotte\", \"country\": \"USA\", \"state\": \"NC\", \"zip\": \"28236\"}, \"items\": [{\"name\": \"Smart Watch\", \"product_id\": \"6945232052\", \"item_id\": \"5694328282\", \"price\": 323.19, \"options\": {\"color\": \"gold\", \"band material\": \"leather\", \"display\": \"AMOLED\"}}, {\"name\": \"Smartphone\", \"product_id\": \"1801728040\", \"item_id\": \"1631373418\", \"price\": 1291.21, \"options\": {\"color\": \"gold\", \"storage\": \"128GB\", \"RAM\": \"6GB\", \"screen size\": \"6.1-inch\"}}, {\"name\": \"Luggage Set\", \"product_id\": \"5426915165\", \"item_id\": \"9956648681\", \"price\": 452.62, \"options\": {\"piece count\": \"4-piece\", \"color\": \"red\", \"material\": \"hardshell\"}}, {\"name\": \"Garden Hose\", \"product_id\": \"6679515468\", \"item_id\": \"4024196380\", \"price\": 102.9, \"options\": {\"length\": \"50ft\", \"material\": \"latex\", \"color\": \"black\"}}], \"fulfillments\": [{\"tracking_id\": [\"731287459054\"], \"item_ids\": [\"5694328282\", \"1631373418\", \"9956648681\", \"4024196380\"]}], \"status\": \"delivered\", \"payment_history\": [{\"transaction_type\": \"payment\", \"amount\": 2169.92, \"payment_method_id\": \"paypal_7644869\"}]}"},
{"content": "Here are the details of your orders:\n\n1. Order #W6390527 (delivered) includes Desk Lamp (white, medium brightness, USB powered), Hiking Boots, and Water Bottle (500ml, glass, black).\n2. Order #W7800651 (pending) includes Gaming Mouse, Bookshelf, and Office Chair.\n3. Order #W8065207 (delivered) includes Smart Watch, Smartphone, Luggage Set, and Garden Hose.\n\nThe items you want to exchange (water bottle for a bigger one, desk lamp for a different one with less brightness and battery-powered) are in order #W6390527.\n\nPlease confirm if you want to proceed with the exchange for order #W6390527. Also, please provide the new item options you want for the water bottle and desk lamp, and the payment method you want to use for any price difference or refund. Remember to confirm you have provided all items to be exchanged.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "Yes, I'd like to proceed with exchanging the desk lamp for one that's less bright and preferably battery-powered."},
{"content": "To proceed with the exchange, I need to know the specific new item options for the desk lamp that you want (e.g., color, brightness level, power source). Also, please confirm if you want to exchange the water bottle as well or just the desk lamp. Additionally, please provide the payment method you want to use for any price difference or refund. \n\nCould you please provide these details?", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "I\u2019d like to exchange just the desk lamp for a less bright, battery-powered option\u2014color doesn\u2019t matter to me. As for payment or refund, you can use my card on file."},
{"content": "I will proceed with exchanging the desk lamp in order #W6390527 for a less bright, battery-powered option. I will use your card on file for any price difference or refund.\n\nBefore proceeding, I need to find the available desk lamp items that match your criteria (less bright, battery-powered) to select the new item for the exchange. Please hold on a moment.", "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"product_id\":\"6817146515\"}", "name": "get_product_details"}, "id": "call_eneaJ6ePQmA9K7FozWrCTAu4", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_eneaJ6ePQmA9K7FozWrCTAu4", "name": "get_product_details", "content": "{\"name\": \"Desk Lamp\", \"product_id\": \"6817146515\", \"variants\": {\"9083642334\": {\"item_id\": \"9083642334\", \"options\": {\"color\": \"white\", \"brightness\": \"high\", \"power source\": \"USB\"}, \"available\": true, \"price\": 164.28}, \"4385534692\": {\"item_id\": \"4385534692\", \"options\": {\"color\": \"white\", \"brightness\": \"high\", \"power source\": \"AC adapter\"}, \"available\": false, \"price\": 138.07}, \"7624783998\": {\"item_id\": \"7624783998\", \"options\": {\"color\": \"black\", \"brightness\": \"high\", \"power source\": \"AC adapter\"}, \"available\": true, \"price\": 154.17}, \"1270145486\": {\"item_id\": \"1270145486\", \"options\": {\"color\": \"white\", \"brightness\": \"high\", \"power source\": \"battery\"}, \"available\": false, \"price\": 144.07}, \"5320792178\": {\"item_id\": \"5320792178\", \"options\": {\"color\": \"black\", \"brightness\": \"medium\", \"power source\": \"AC adapter\"}, \"available\": true, \"price\": 135.24}, \"5370728469\": {\"item_id\": \"5370728469\", \"options\": {\"color\": \"silver\", \"brightness\": \"medium\", \"power source\": \"USB\"}, \"available\": true, \"price\": 164.97}, \"6805564527\": {\"item_id\": \"6805564527\", \"options\": {\"color\": \"black\", \"brightness\": \"medium\", \"power source\": \"USB\"}, \"available\": true, \"price\": 158.41}, \"1569765161\": {\"item_id\": \"1569765161\", \"options\": {\"color\": \"silver\", \"brightness\": \"low\", \"power source\": \"AC adapter\"}, \"available\": true, \"price\": 143.02}, \"7453605304\": {\"item_id\": \"7453605304\", \"options\": {\"color\": \"silver\", \"brightness\": \"low\", \"power source\": \"battery\"}, \"available\": true, \"price\": 150.01}, \"9190635437\": {\"item_id\": \"9190635437\", \"options\": {\"color\": \"black\", \"brightness\": \"low\", \"power source\": \"USB\"}, \"available\": true, \"price\": 153.23}, \"4447749792\": {\"item_id\": \"4447749792\", \"options\": {\"color\": \"white\", \"brightness\": \"medium\", \"power source\": \"AC adapter\"}, \"available\": false, \"price\": 139.8}, \"8384507844\": {\"item_id\": \"8384507844\", \"options\": {\"color\": \"white\", \"brightness\": \"medium\", \"power source\": \"USB\"}, \"available\": false, \"price\": 137.94}}}"},
{"content": "I found available desk lamp options that are less bright and battery-powered:\n\n- Item ID 7453605304: Silver color, low brightness, battery-powered, price $150.01\n\nThis seems to match your preference for a less bright, battery-powered desk lamp. Please confirm if you want to exchange your current desk lamp (item ID 8384507844) for this item (ID 7453605304) using your card on file for any price difference or refund. Also, confirm that you have provided all items to be exchanged.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "Yes, I confirm I want to exchange the desk lamp for the silver, less bright, battery-powered one. That\u2019s the only item I want to exchange."},
{"content": "To confirm, you want to exchange the desk lamp (item ID 8384507844) in order #W6390527 for the silver, less bright, battery-powered desk lamp (item ID 7453605304). You want to use your card on file (PayPal ID paypal_7644869) for any price difference or refund. This is the only item you want to exchange.\n\nPlease confirm with a \"yes\" to proceed with the exchange or \"no\" to cancel.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "No, I don\u2019t want to exchange anything anymore. Instead, I\u2019d like to return the water bottle."},
{"content": "Understood. You want to return the water bottle from order #W6390527 instead of exchanging items.\n\nTo proceed with the return, I need to confirm the following:\n- The order ID: #W6390527\n- The item to be returned: water bottle (item ID 8538875209)\n- The payment method to receive the refund (it must be either the original payment method or an existing gift card). Your original payment method is PayPal (ID paypal_7644869).\n\nPlease confirm these details and provide your confirmation with a \"yes\" to proceed with the return or \"no\" to cancel.", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "Yes."},
{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"order_id\":\"#W6390527\",\"item_ids\":[\"8538875209\"],\"payment_method_id\":\"paypal_7644869\"}", "name": "return_delivered_order_items"}, "id": "call_gC1eH6nhHxdwGIWHYdcAEVWH", "type": "function"}], "function_call": null, "annotations": []},
{"role": "tool", "tool_call_id": "call_gC1eH6nhHxdwGIWHYdcAEVWH", "name": "return_delivered_order_items", "content": "{\"order_id\": \"#W6390527\", \"user_id\": \"mei_kovacs_8020\", \"address\": {\"address1\": \"317 Elm Street\", \"address2\": \"Suite 461\", \"city\": \"Charlotte\", \"country\": \"USA\", \"state\": \"NC\", \"zip\": \"28236\"}, \"items\": [{\"name\": \"Desk Lamp\", \"product_id\": \"6817146515\", \"item_id\": \"8384507844\", \"price\": 137.94, \"options\": {\"color\": \"white\", \"brightness\": \"medium\", \"power source\": \"USB\"}}, {\"name\": \"Hiking Boots\", \"product_id\": \"7363354090\", \"item_id\": \"1615379700\", \"price\": 253.89, \"options\": {\"size\": \"10\", \"material\": \"synthetic\", \"waterproof\": \"yes\"}}, {\"name\": \"Water Bottle\", \"product_id\": \"8310926033\", \"item_id\": \"8538875209\", \"price\": 45.13, \"options\": {\"capacity\": \"500ml\", \"material\": \"glass\", \"color\": \"black\"}}], \"fulfillments\": [{\"tracking_id\": [\"745984883162\"], \"item_ids\": [\"8384507844\", \"1615379700\", \"8538875209\"]}], \"status\": \"return requested\", \"payment_history\": [{\"transaction_type\": \"payment\", \"amount\": 436.96, \"payment_method_id\": \"paypal_7644869\"}], \"return_items\": [\"8538875209\"], \"return_payment_method_id\": \"paypal_7644869\"}"},
{"content": "The return request for the water bottle from order #W6390527 has been submitted. You will receive an email with instructions on how and where to return the item. The refund will be processed to your PayPal account. If you need any further assistance, feel free to ask!", "role": "assistant", "tool_calls": null, "function_call": null, "annotations": []},
{"role": "user", "content": "###STOP###"}
]}"""


if __name__ == "__main__":
    main()
