// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {BatchSettlement, ChannelConfig, VoucherClaim, ERC3009_DEPOSIT_COLLECTOR_ADDRESS} from "../../src/x402/BatchSettlement.sol";
import {ERC3009DepositCollector} from "../../src/x402/ERC3009DepositCollector.sol";
import {TestUSDC} from "../../src/TestUSDC.sol";
import {BatchSettlementHarness, FakeCollector, ReentrantToken} from "./BatchSettlementHarness.sol";

/// The x402 batch-settlement channel: the happy path (deposit, claim, settle, withdraw, refund), fuzzed voucher
/// sequences that check every unit against a model, and one attacker's call per way out.
contract BatchSettlementTest is BatchSettlementHarness {
    function test_digests_match_the_typed_data() public view {
        ChannelConfig memory c = config(bytes32(uint256(7)));
        bytes32 id = channelIdOf(c);
        eq(uint256(bs.getChannelId(c)), uint256(id), "channel id");
        eq(uint256(bs.getVoucherDigest(id, 1234)), uint256(voucherDigest(id, 1234)), "voucher digest");
        eq(uint256(bs.getRefundDigest(id, 3, 55)), uint256(refundDigest(id, 3, 55)), "refund digest");
        VoucherClaim[] memory claims = new VoucherClaim[](2);
        claims[0] = voucherClaim(c, 10, 9, PAYER_KEY);
        claims[1] = voucherClaim(config(bytes32(uint256(8))), 20, 20, PAYER_KEY);
        eq(uint256(bs.getClaimBatchDigest(claims)), uint256(claimBatchDigest(claims)), "claim batch digest");
    }

    function test_deposit_credits_the_channel_with_the_payers_tokens() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        (uint128 balance, uint128 claimed) = channel(id);
        eq(balance, 5_000, "balance");
        eq(claimed, 0, "claimed");
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 5_000, "payer");
        eq(usdc.balanceOf(address(bs)), 5_000, "contract");
        eq(usdc.balanceOf(ERC3009_DEPOSIT_COLLECTOR_ADDRESS), 0, "collector keeps nothing");
        deposit(c, 1_000); // a top-up adds to the same channel
        (balance,) = channel(id);
        eq(balance, 6_000, "topped up");
    }

    function test_claim_then_settle_pays_the_receiver_once() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 3_000, 3_000);
        (uint128 balance, uint128 claimed) = channel(id);
        eq(balance, 5_000, "balance stays what was deposited");
        eq(claimed, 3_000, "claimed");
        (uint128 owed, uint128 settled) = receiverState();
        eq(owed, 3_000, "receiver claimed");
        eq(settled, 0, "receiver settled");
        vm.prank(attacker); // anyone may settle: the money only goes to the receiver
        bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), 3_000, "receiver paid");
        eq(usdc.balanceOf(address(bs)), 2_000, "the rest stays");
        bs.settle(RECEIVER, address(usdc)); // nothing owed: nothing happens (the official contract does not revert)
        eq(usdc.balanceOf(RECEIVER), 3_000, "paid once");
    }

    function test_claimWithSignature_can_be_sent_by_anyone() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 2_000, 1_500, PAYER_KEY));
        bytes memory sig = sign(AUTHORIZER_KEY, claimBatchDigest(claims));
        vm.prank(FACILITATOR);
        bs.claimWithSignature(claims, sig);
        (, uint128 claimed) = channel(id);
        eq(claimed, 1_500, "claimed");
    }

    function test_payer_withdraws_the_unclaimed_rest_after_the_delay() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 1_000, 1_000);
        vm.prank(payer);
        bs.initiateWithdraw(c, 4_000);
        vm.warp(block.timestamp + DELAY);
        vm.prank(payer);
        bs.finalizeWithdraw(c);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 1_000, "payer got the unclaimed 4000 back");
        (uint128 balance, uint128 claimed) = channel(id);
        eq(balance, 1_000, "balance");
        eq(claimed, 1_000, "claimed");
        bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), 1_000, "receiver still paid");
        eq(usdc.balanceOf(address(bs)), 0, "nothing left");
    }

    function test_cooperative_refunds_return_the_unclaimed_balance() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 2_000, 2_000);
        vm.prank(receiverAuthorizer);
        bs.refund(c, 500);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 4_500, "direct refund");
        eq(bs.refundNonce(id), 1, "a direct refund moves the nonce on");
        bytes memory sig = sign(AUTHORIZER_KEY, refundDigest(id, 1, 10_000));
        vm.prank(FACILITATOR);
        bs.refundWithSignature(c, 10_000, 1, sig); // more than is free: capped at 2500
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 2_000, "signed refund, capped");
        eq(bs.refundNonce(id), 2, "nonce used");
        (uint128 balance, uint128 claimed) = channel(id);
        eq(balance, 2_000, "balance down to what is claimed");
        eq(claimed, 2_000, "claimed untouched");
        vm.prank(receiverAuthorizer);
        vm.expectRevert(BatchSettlement.NothingToRefund.selector);
        bs.refund(c, 1);
    }

    function test_multicall_claims_the_last_voucher_and_refunds_the_rest() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 2_000, 2_000);
        // as the package's refund: a claim entry (here to 3000), then the refund of what is left, in one transaction
        VoucherClaim[] memory claims = one(voucherClaim(c, 3_000, 3_000, PAYER_KEY));
        bytes[] memory calls = new bytes[](2);
        calls[0] = abi.encodeCall(BatchSettlement.claimWithSignature, (claims, sign(AUTHORIZER_KEY, claimBatchDigest(claims))));
        calls[1] = abi.encodeCall(BatchSettlement.refundWithSignature, (c, 2_000, 0, sign(AUTHORIZER_KEY, refundDigest(id, 0, 2_000))));
        vm.prank(FACILITATOR);
        bs.multicall(calls);
        (uint128 balance, uint128 claimed) = channel(id);
        eq(claimed, 3_000, "claimed");
        eq(balance, 3_000, "balance");
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 3_000, "payer refunded 2000");
        // the same claim again (already claimed) changes nothing and does not fail the batch
        calls = new bytes[](1);
        calls[0] = abi.encodeCall(BatchSettlement.claimWithSignature, (claims, sign(AUTHORIZER_KEY, claimBatchDigest(claims))));
        bs.multicall(calls);
        (uint128 owed,) = receiverState();
        eq(owed, 3_000, "owed once");
    }

    /// A sequence of claims with random cumulative amounts and voucher ceilings: every accepted claim raises
    /// totalClaimed to exactly its amount, stale ones change nothing, ones above the balance revert; at the end
    /// the receiver is paid the model's total and the payer gets every other unit back.
    function testFuzz_claim_sequences_match_the_model(uint64 depositSeed, uint64[4] memory totals, uint64[4] memory headroom) public {
        uint128 amount = uint128(bound(depositSeed, 1, 1e13));
        ChannelConfig memory c = config(keccak256(abi.encode(depositSeed)));
        bytes32 id = deposit(c, amount);
        uint128 model;
        for (uint256 i; i < 4; ++i) {
            uint128 total = uint128(bound(totals[i], 0, uint256(amount) * 2));
            uint128 max = total + uint128(bound(headroom[i], 0, amount));
            VoucherClaim[] memory claims = one(voucherClaim(c, max, total, PAYER_KEY));
            vm.prank(receiverAuthorizer);
            if (total > amount) vm.expectRevert(abi.encodeWithSelector(BatchSettlement.ClaimExceedsBalance.selector, total, amount));
            bs.claim(claims);
            if (total <= amount && total > model) model = total;
            (, uint128 claimed) = channel(id);
            eq(claimed, model, "channel claimed");
            (uint128 owed,) = receiverState();
            eq(owed, model, "receiver owed");
        }
        if (model > 0) bs.settle(RECEIVER, address(usdc));
        if (amount > model) {
            vm.prank(payer);
            bs.initiateWithdraw(c, amount - model);
            vm.warp(block.timestamp + DELAY);
            vm.prank(payer);
            bs.finalizeWithdraw(c);
        }
        eq(usdc.balanceOf(RECEIVER), model, "receiver paid the model's total");
        eq(usdc.balanceOf(payer), PAYER_FUNDS - model, "payer got the rest");
        eq(usdc.balanceOf(address(bs)), 0, "nothing stuck");
    }

    function testFuzz_a_claim_above_its_voucher_reverts(uint64 maxSeed, uint64 over) public {
        uint128 max = uint128(bound(maxSeed, 0, 1e12));
        uint128 total = max + 1 + uint128(bound(over, 0, 1e12));
        ChannelConfig memory c = config(0);
        deposit(c, uint128(3e12));
        VoucherClaim[] memory claims = one(voucherClaim(c, max, total, PAYER_KEY));
        vm.prank(receiverAuthorizer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.ClaimExceedsVoucher.selector, total, max));
        bs.claim(claims);
    }

    /// the payer announces up to what is unclaimed; the receiver claims during the delay; the payer never gets a claimed unit
    function testFuzz_a_withdrawal_never_takes_claimed_funds(uint64 depositSeed, uint64 claimSeed, uint64 askSeed) public {
        uint128 amount = uint128(bound(depositSeed, 1, 1e13));
        uint128 claimed = uint128(bound(claimSeed, 0, amount));
        uint128 ask = uint128(bound(askSeed, 1, amount));
        ChannelConfig memory c = config(0);
        deposit(c, amount);
        vm.prank(payer);
        bs.initiateWithdraw(c, ask);
        vm.warp(block.timestamp + DELAY - 1);
        if (claimed > 0) claimAs(c, claimed, claimed);
        vm.warp(block.timestamp + 1);
        vm.prank(payer);
        bs.finalizeWithdraw(c);
        uint128 free = amount - claimed;
        eq(usdc.balanceOf(payer), PAYER_FUNDS - amount + (ask < free ? ask : free), "payer got min(ask, unclaimed)");
        if (claimed > 0) bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), claimed, "receiver got every claimed unit");
    }

    function test_attack_payee_claims_more_than_the_balance() public {
        ChannelConfig memory c = config(0);
        deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 5_001, 5_001, PAYER_KEY)); // the payer over-signed
        vm.prank(receiverAuthorizer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.ClaimExceedsBalance.selector, 5_001, 5_000));
        bs.claim(claims);
    }

    function test_attack_voucher_signed_by_someone_else() public {
        ChannelConfig memory c = config(0);
        deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 1_000, 1_000, ATTACKER_KEY));
        vm.prank(receiverAuthorizer);
        vm.expectRevert(BatchSettlement.InvalidVoucherSignature.selector);
        bs.claim(claims);
        // the payer's voucher for another channel does not open this one
        VoucherClaim memory other = voucherClaim(config(bytes32(uint256(1))), 1_000, 1_000, PAYER_KEY);
        other.voucher.channel = c;
        vm.prank(receiverAuthorizer);
        vm.expectRevert(BatchSettlement.InvalidVoucherSignature.selector);
        bs.claim(one(other));
    }

    function test_attack_voucher_without_payer_authorizer_is_checked_against_the_payer() public {
        ChannelConfig memory c = config(0);
        c.payerAuthorizer = address(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 1_000, 1_000, ATTACKER_KEY));
        vm.prank(receiverAuthorizer);
        vm.expectRevert(BatchSettlement.InvalidVoucherSignature.selector);
        bs.claim(claims);
        claimAs(c, 1_000, 1_000);
        (, uint128 claimed) = channel(id);
        eq(claimed, 1_000, "the payer's own voucher works");
    }

    function test_attack_replaying_an_older_lower_voucher_changes_nothing() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 3_000, 3_000);
        bs.settle(RECEIVER, address(usdc));
        claimAs(c, 1_000, 1_000); // the older voucher
        claimAs(c, 3_000, 3_000); // the same voucher again
        (, uint128 claimed) = channel(id);
        eq(claimed, 3_000, "claimed");
        (uint128 owed, uint128 settled) = receiverState();
        eq(owed, 3_000, "owed");
        eq(settled, 3_000, "settled");
        bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), 3_000, "paid once");
    }

    function test_attack_claim_not_sent_by_the_receiver_authorizer() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 1_000, 1_000, PAYER_KEY));
        vm.prank(RECEIVER); // the receiver itself may claim, as on the official contract: within the voucher only
        bs.claim(claims);
        (, uint128 claimed) = channel(id);
        eq(claimed, 1_000, "claimed by the receiver");
        claims = one(voucherClaim(c, 2_000, 2_000, PAYER_KEY));
        vm.prank(attacker);
        vm.expectRevert(BatchSettlement.NotReceiverAuthorizer.selector);
        bs.claim(claims);
    }

    function test_attack_claim_signature_not_by_the_receiver_authorizer() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim[] memory claims = one(voucherClaim(c, 2_000, 2_000, PAYER_KEY));
        vm.expectRevert(BatchSettlement.InvalidClaimSignature.selector);
        bs.claimWithSignature(claims, sign(ATTACKER_KEY, claimBatchDigest(claims)));
        // the authorizer's signature for 1000 does not carry a claim of 2000
        VoucherClaim[] memory signedFor = one(voucherClaim(c, 2_000, 1_000, PAYER_KEY));
        vm.expectRevert(BatchSettlement.InvalidClaimSignature.selector);
        bs.claimWithSignature(claims, sign(AUTHORIZER_KEY, claimBatchDigest(signedFor)));
        (, uint128 claimed) = channel(id);
        eq(claimed, 0, "nothing claimed");
    }

    function test_attack_payer_withdraws_claimed_funds() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 4_000, 4_000);
        vm.prank(payer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.WithdrawExceedsUnclaimed.selector, uint128(5_000), uint128(1_000)));
        bs.initiateWithdraw(c, 5_000);
        vm.prank(payer);
        bs.initiateWithdraw(c, 1_000);
        vm.warp(block.timestamp + DELAY);
        vm.prank(payer);
        bs.finalizeWithdraw(c);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 4_000, "only the unclaimed 1000 came back");
        (uint128 balance,) = channel(id);
        eq(balance, 4_000, "claimed funds stay");
        bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), 4_000, "receiver paid in full");
    }

    function test_attack_payer_finalizes_early() public {
        ChannelConfig memory c = config(0);
        deposit(c, 5_000);
        vm.prank(payer);
        vm.expectRevert(BatchSettlement.NoPendingWithdrawal.selector);
        bs.finalizeWithdraw(c);
        vm.prank(payer);
        bs.initiateWithdraw(c, 5_000);
        uint256 readyAt = block.timestamp + DELAY;
        vm.warp(readyAt - 1);
        vm.prank(payer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.WithdrawNotReady.selector, readyAt));
        bs.finalizeWithdraw(c);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 5_000, "nothing paid early");
    }

    function test_attack_someone_else_withdraws() public {
        ChannelConfig memory c = config(0);
        deposit(c, 5_000);
        vm.prank(attacker);
        vm.expectRevert(BatchSettlement.NotPayer.selector);
        bs.initiateWithdraw(c, 5_000);
        vm.prank(payer);
        bs.initiateWithdraw(c, 5_000);
        vm.warp(block.timestamp + DELAY);
        vm.prank(attacker);
        vm.expectRevert(BatchSettlement.NotPayer.selector);
        bs.finalizeWithdraw(c);
    }

    function test_attack_deposit_with_an_out_of_range_delay() public {
        ChannelConfig memory c = config(0);
        c.withdrawDelay = 899;
        bytes memory data = depositData(c, 1_000, 1);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.WithdrawDelayOutOfRange.selector, uint40(899)));
        bs.deposit(c, 1_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        c.withdrawDelay = 2_592_001;
        data = depositData(c, 1_000, 1);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.WithdrawDelayOutOfRange.selector, uint40(2_592_001)));
        bs.deposit(c, 1_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
    }

    function test_attack_refund_replay_and_forged_refunds() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        bytes memory sig = sign(AUTHORIZER_KEY, refundDigest(id, 0, 1_000));
        bs.refundWithSignature(c, 1_000, 0, sig);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.InvalidRefundNonce.selector, 1, 0));
        bs.refundWithSignature(c, 1_000, 0, sig);
        vm.expectRevert(BatchSettlement.InvalidRefundSignature.selector);
        bs.refundWithSignature(c, 1_000, 1, sig); // the old signature at the new nonce
        vm.expectRevert(BatchSettlement.InvalidRefundSignature.selector);
        bs.refundWithSignature(c, 4_000, 1, sign(ATTACKER_KEY, refundDigest(id, 1, 4_000)));
        vm.prank(attacker);
        vm.expectRevert(BatchSettlement.NotReceiverAuthorizer.selector);
        bs.refund(c, 4_000);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 4_000, "refunded once");
    }

    function test_attack_deposit_through_a_fake_collector() public {
        ChannelConfig memory c = config(0);
        FakeCollector fake = new FakeCollector();
        usdc.mint(address(fake), 5_000);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.UnknownCollector.selector, address(fake)));
        bs.deposit(c, 5_000, address(fake), "");
        // nor can anyone but the batch contract drive the real collector
        bytes memory data = depositData(c, 5_000, 1);
        vm.prank(attacker);
        vm.expectRevert(ERC3009DepositCollector.OnlyBatchSettlement.selector);
        ERC3009DepositCollector(ERC3009_DEPOSIT_COLLECTOR_ADDRESS).collect(payer, address(usdc), 5_000, channelIdOf(c), data);
    }

    function test_attack_deposit_signature_redirected_or_replayed() public {
        ChannelConfig memory c = config(0);
        bytes memory data = depositData(c, 5_000, 1);
        ChannelConfig memory stolen = config(0);
        stolen.receiver = attacker;
        stolen.receiverAuthorizer = attacker;
        vm.expectRevert(TestUSDC.InvalidSignature.selector); // the nonce binds the signature to its channel
        bs.deposit(stolen, 5_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        vm.expectRevert(TestUSDC.InvalidSignature.selector); // and to its amount
        bs.deposit(c, 6_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        bs.deposit(c, 5_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        vm.expectRevert(TestUSDC.AuthorizationAlreadyUsed.selector);
        bs.deposit(c, 5_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        eq(usdc.balanceOf(address(bs)), 5_000, "one deposit");
    }

    function test_attack_reentry_through_the_token_on_settle_and_deposit() public {
        ReentrantToken token = new ReentrantToken();
        token.mint(payer, 10_000);
        ChannelConfig memory c = config(0);
        c.token = address(token);
        bs.deposit(c, 5_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, abi.encode(uint256(0), uint256(0), uint256(0), abi.encodePacked(bytes32(0), bytes32(0), uint8(27))));
        claimAs(c, 2_000, 2_000);
        token.arm(abi.encodeCall(BatchSettlement.settle, (RECEIVER, address(token))));
        bs.settle(RECEIVER, address(token));
        if (!token.attempted() || token.reentered()) revert("settle re-entry was not attempted, or got through");
        eq(token.balanceOf(RECEIVER), 2_000, "receiver paid once");
        eq(token.balanceOf(address(bs)), 3_000, "contract");
        ReentrantToken token2 = new ReentrantToken();
        token2.mint(payer, 10_000);
        c.token = address(token2);
        bytes memory data = abi.encode(uint256(0), uint256(0), uint256(0), abi.encodePacked(bytes32(0), bytes32(0), uint8(27)));
        token2.arm(abi.encodeCall(BatchSettlement.deposit, (c, 1_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data))); // a valid deposit: only the lock stops it
        bs.deposit(c, 1_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        if (!token2.attempted() || token2.reentered()) revert("deposit re-entry was not attempted, or got through");
        (uint128 balance,) = channel(channelIdOf(c));
        eq(balance, 1_000, "credited once");
    }
}
