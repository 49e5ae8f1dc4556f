// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {BatchSettlement, ChannelConfig, VoucherClaim, ERC3009_DEPOSIT_COLLECTOR_ADDRESS} from "../../src/x402/BatchSettlement.sol";
import {ERC3009DepositCollector} from "../../src/x402/ERC3009DepositCollector.sol";
import {BatchSettlementHarness} from "./BatchSettlementHarness.sol";

/// Differential rows of docs/X402-CONTRACTS.md: each test states the rule the contract at the canonical address on
/// Base runs (OpenZeppelin's ECDSA for vouchers, Base's USDC for ERC-3009, the refund nonce) and asserts that the
/// local contract gives the same answer for the same call.
contract OfficialRulesTest is BatchSettlementHarness {
    /// the signature with its last byte (v) replaced
    function withV(bytes memory signature, uint8 v) internal pure returns (bytes memory out) {
        out = bytes.concat(signature);
        out[64] = bytes1(v);
    }

    /// row claim: a voucher is claimable iff the official rule recovers the payer from it; v 0/1 is not
    function testFuzz_voucher_v_byte_claimable_exactly_as_official(uint8 v) public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim memory claim = voucherClaim(c, 1_000, 1_000, PAYER_KEY);
        uint8 signed = uint8(claim.signature[64]);
        // the same key's signature with v as written by a payer that uses 0/1, or any other byte
        claim.signature = withV(claim.signature, v == 0 || v == 1 ? signed - 27 : v);
        bool official = officialRecover(voucherDigest(id, 1_000), claim.signature) == payer;
        vm.prank(receiverAuthorizer);
        if (!official) vm.expectRevert(BatchSettlement.InvalidVoucherSignature.selector);
        bs.claim(one(claim));
        (, uint128 claimed) = channel(id);
        eq(claimed, official ? 1_000 : 0, "claimed as the official rule");
    }

    /// the attack: a payer writes its vouchers' v as 0/1, is served, and no claim of its channel ever succeeds
    function test_attack_voucher_with_v_0_or_1_is_refused() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        VoucherClaim memory claim = voucherClaim(c, 5_000, 5_000, PAYER_KEY);
        claim.signature = withV(claim.signature, uint8(claim.signature[64]) - 27);
        vm.prank(receiverAuthorizer);
        vm.expectRevert(BatchSettlement.InvalidVoucherSignature.selector);
        bs.claim(one(claim));
        (, uint128 claimed) = channel(id);
        eq(claimed, 0, "nothing claimed");
    }

    /// row deposit (ERC-3009 collector): Base's USDC refuses a ReceiveWithAuthorization signature with v 0/1
    function test_deposit_signature_with_v_0_or_1_is_refused() public {
        ChannelConfig memory c = config(0);
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory sig) = abi.decode(depositData(c, 1_000, 1), (uint256, uint256, uint256, bytes));
        bytes memory data = abi.encode(validAfter, validBefore, salt, withV(sig, uint8(sig[64]) - 27));
        vm.prank(FACILITATOR);
        vm.expectRevert(ERC3009DepositCollector.InvalidSignature.selector);
        bs.deposit(c, 1_000, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
    }

    /// row refund: every refund advances refundNonce, so a direct refund voids a Refund signature given out before
    function test_attack_direct_refund_voids_an_earlier_signed_refund() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        claimAs(c, 1_000, 1_000);
        bytes memory signedRefund = sign(AUTHORIZER_KEY, refundDigest(id, 0, 4_000));
        vm.prank(receiverAuthorizer);
        bs.refund(c, 2_000); // the authorizer replaces the signed refund by a smaller direct one
        eq(bs.refundNonce(id), 1, "official: refundNonce++ on every refund");
        vm.prank(payer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.InvalidRefundNonce.selector, 1, 0));
        bs.refundWithSignature(c, 4_000, 0, signedRefund);
        (uint128 balance, uint128 claimed) = channel(id);
        eq(balance, 3_000, "the unclaimed balance kept");
        eq(claimed, 1_000, "claimed");
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 3_000, "refunded once");
    }

    /// row settle: with nothing owed the official settle neither reverts nor pays
    function test_settle_with_nothing_owed_does_nothing() public {
        uint256 before = usdc.balanceOf(RECEIVER);
        bs.settle(RECEIVER, address(usdc));
        eq(usdc.balanceOf(RECEIVER), before, "nothing paid");
    }

    /// row claim: the official claim takes the channel's receiver as caller too (within the payer's voucher)
    function test_receiver_may_claim() public {
        ChannelConfig memory c = config(0);
        bytes32 id = deposit(c, 5_000);
        vm.prank(RECEIVER);
        bs.claim(one(voucherClaim(c, 1_000, 1_000, PAYER_KEY)));
        (, uint128 claimed) = channel(id);
        eq(claimed, 1_000, "claimed by the receiver");
    }

    /// row initiateWithdraw: one announcement at a time (a second one cannot restart the clock), of at most what is unclaimed
    function test_attack_second_withdrawal_announcement_and_one_above_the_unclaimed_are_refused() public {
        ChannelConfig memory c = config(0);
        deposit(c, 5_000);
        vm.prank(RECEIVER);
        bs.claim(one(voucherClaim(c, 1_000, 1_000, PAYER_KEY)));
        vm.prank(payer);
        vm.expectRevert(abi.encodeWithSelector(BatchSettlement.WithdrawExceedsUnclaimed.selector, uint128(4_001), uint128(4_000)));
        bs.initiateWithdraw(c, 4_001);
        vm.prank(payer);
        bs.initiateWithdraw(c, 4_000);
        vm.warp(block.timestamp + DELAY - 1);
        vm.prank(payer);
        vm.expectRevert(BatchSettlement.WithdrawalAlreadyPending.selector);
        bs.initiateWithdraw(c, 1_000);
        vm.warp(block.timestamp + 1);
        vm.prank(payer);
        bs.finalizeWithdraw(c);
        eq(usdc.balanceOf(payer), PAYER_FUNDS - 1_000, "the payer got the unclaimed 4,000 at the first announcement's time");
    }
}
