// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {TestUSDC} from "../../src/TestUSDC.sol";
import {
    BatchSettlement,
    ChannelConfig,
    Voucher,
    VoucherClaim,
    IDepositCollector,
    BATCH_SETTLEMENT_ADDRESS,
    ERC3009_DEPOSIT_COLLECTOR_ADDRESS
} from "../../src/x402/BatchSettlement.sol";
import {ERC3009DepositCollector} from "../../src/x402/ERC3009DepositCollector.sol";

/// The few Forge cheatcodes these tests use (the npm forge-std is an incomplete copy)
interface Vm {
    function prank(address sender) external;
    function startPrank(address sender) external;
    function stopPrank() external;
    function warp(uint256 timestamp) external;
    function etch(address target, bytes calldata code) external;
    function store(address target, bytes32 slot, bytes32 value) external;
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function addr(uint256 privateKey) external pure returns (address);
    function expectRevert(bytes calldata revertData) external;
    function expectRevert(bytes4 selector) external;
    function assume(bool condition) external pure;
}

/// A collector that is not the canonical one: it "collects" by sending its own tokens (or nothing at all)
contract FakeCollector is IDepositCollector {
    function collect(address, address token, uint256 amount, bytes32, bytes calldata) external {
        TestUSDC(token).transfer(msg.sender, amount);
    }
}

/// A token that calls back into the batch settlement contract from `transfer` and `receiveWithAuthorization`
/// (no signature check: it is the attacker's own token), and records whether the re-entry got through.
contract ReentrantToken {
    mapping(address => uint256) public balanceOf;
    bytes public reentryCall;
    bool public reentered;
    bool public attempted;

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
    }

    function arm(bytes calldata call) external {
        reentryCall = call;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        _reenter();
        return true;
    }

    function receiveWithAuthorization(address from, address to, uint256 value, uint256, uint256, bytes32, uint8, bytes32, bytes32) external {
        _move(from, to, value);
        _reenter();
    }

    function _move(address from, address to, uint256 amount) private {
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
    }

    function _reenter() private {
        if (reentryCall.length == 0 || attempted) return;
        attempted = true;
        (bool ok,) = BATCH_SETTLEMENT_ADDRESS.call(reentryCall);
        reentered = ok;
    }
}

/// Shared set-up: the contracts at their canonical addresses, TestUSDC, keys, and the EIP-712 hashing written
/// out here from the type strings (not read from the contract under test).
abstract contract BatchSettlementHarness {
    bool public constant IS_TEST = true;
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    BatchSettlement internal constant bs = BatchSettlement(BATCH_SETTLEMENT_ADDRESS);
    TestUSDC internal usdc;

    uint256 internal constant PAYER_KEY = 0xA11CE;
    uint256 internal constant AUTHORIZER_KEY = 0xB0B;
    uint256 internal constant ATTACKER_KEY = 0xBAD;
    address internal payer;
    address internal receiverAuthorizer;
    address internal attacker;
    address internal constant RECEIVER = address(0x5EC0);
    address internal constant FACILITATOR = address(0xFAC1);
    uint40 internal constant DELAY = 900;
    uint256 internal constant PAYER_FUNDS = 100_000_000e6; // above every fuzzed deposit (at most 1e13)
    uint256 private depositSalt;

    function setUp() public virtual {
        vm.etch(BATCH_SETTLEMENT_ADDRESS, address(new BatchSettlement()).code);
        vm.etch(ERC3009_DEPOSIT_COLLECTOR_ADDRESS, address(new ERC3009DepositCollector()).code);
        usdc = new TestUSDC();
        vm.store(address(usdc), bytes32(0), bytes32(uint256(uint160(address(this))))); // minter
        payer = vm.addr(PAYER_KEY);
        receiverAuthorizer = vm.addr(AUTHORIZER_KEY);
        attacker = vm.addr(ATTACKER_KEY);
        usdc.mint(payer, PAYER_FUNDS);
        vm.warp(1_700_000_000);
    }

    // ------------------------------------------------------------ EIP-712, from the type strings

    function domainSeparator() internal view returns (bytes32) {
        return keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("x402 Batch Settlement"),
                keccak256("1"),
                block.chainid,
                BATCH_SETTLEMENT_ADDRESS
            )
        );
    }

    function typed(bytes32 structHash) internal view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function channelIdOf(ChannelConfig memory c) internal view returns (bytes32) {
        bytes32 typehash = keccak256(
            "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
        );
        return typed(
            keccak256(abi.encode(typehash, c.payer, c.payerAuthorizer, c.receiver, c.receiverAuthorizer, c.token, c.withdrawDelay, c.salt))
        );
    }

    function voucherDigest(bytes32 channelId, uint128 max) internal view returns (bytes32) {
        return typed(keccak256(abi.encode(keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)"), channelId, max)));
    }

    function refundDigest(bytes32 channelId, uint256 nonce, uint128 amount) internal view returns (bytes32) {
        return typed(keccak256(abi.encode(keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)"), channelId, nonce, amount)));
    }

    function claimBatchDigest(VoucherClaim[] memory claims) internal view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](claims.length);
        for (uint256 i; i < claims.length; ++i) {
            entries[i] = keccak256(
                abi.encode(
                    keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"),
                    channelIdOf(claims[i].voucher.channel),
                    claims[i].voucher.maxClaimableAmount,
                    claims[i].totalClaimed
                )
            );
        }
        bytes32 typehash =
            keccak256("ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
        return typed(keccak256(abi.encode(typehash, keccak256(abi.encodePacked(entries)))));
    }

    function sign(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }

    // ------------------------------------------------------------ channel helpers

    function config(bytes32 salt) internal view returns (ChannelConfig memory) {
        return ChannelConfig(payer, payer, RECEIVER, receiverAuthorizer, address(usdc), DELAY, salt);
    }

    /// the collector data of a deposit the payer signs for `signedFor` (ReceiveWithAuthorization to the collector)
    function depositData(ChannelConfig memory signedFor, uint256 amount, uint256 salt) internal view returns (bytes memory) {
        uint256 validBefore = block.timestamp + 300;
        bytes32 nonce = keccak256(abi.encode(channelIdOf(signedFor), salt));
        bytes32 structHash = keccak256(
            abi.encode(usdc.RECEIVE_WITH_AUTHORIZATION_TYPEHASH(), payer, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, amount, 0, validBefore, nonce)
        );
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash));
        return abi.encode(uint256(0), validBefore, salt, sign(PAYER_KEY, digest));
    }

    /// a deposit sent by the facilitator with the payer's signature
    function deposit(ChannelConfig memory c, uint128 amount) internal returns (bytes32) {
        bytes memory data = depositData(c, amount, ++depositSalt);
        vm.prank(FACILITATOR);
        bs.deposit(c, amount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data);
        return channelIdOf(c);
    }

    function voucherClaim(ChannelConfig memory c, uint128 max, uint128 total, uint256 signerKey) internal view returns (VoucherClaim memory) {
        return VoucherClaim(Voucher(c, max), sign(signerKey, voucherDigest(channelIdOf(c), max)), total);
    }

    function one(VoucherClaim memory c) internal pure returns (VoucherClaim[] memory claims) {
        claims = new VoucherClaim[](1);
        claims[0] = c;
    }

    /// the receiver authorizer claims up to `total` with the payer's voucher for `max`
    function claimAs(ChannelConfig memory c, uint128 max, uint128 total) internal {
        VoucherClaim[] memory claims = one(voucherClaim(c, max, total, PAYER_KEY));
        vm.prank(receiverAuthorizer);
        bs.claim(claims);
    }

    function channel(bytes32 id) internal view returns (uint128 balance, uint128 totalClaimed) {
        return bs.channels(id);
    }

    function receiverState() internal view returns (uint128 totalClaimed, uint128 totalSettled) {
        return bs.receivers(RECEIVER, address(usdc));
    }

    function eq(uint256 a, uint256 b, string memory what) internal pure {
        if (a != b) revert(string.concat(what, ": ", toString(a), " != ", toString(b)));
    }

    function toString(uint256 v) internal pure returns (string memory) {
        if (v == 0) return "0";
        bytes memory out;
        while (v > 0) {
            out = abi.encodePacked(bytes1(uint8(48 + (v % 10))), out);
            v /= 10;
        }
        return string(out);
    }

    /// the rule Base runs for a voucher (OpenZeppelin ECDSA.tryRecover): 65 bytes, s in the lower half, v exactly 27
    /// or 28; any other signature recovers to address(0)
    function officialRecover(bytes32 digest, bytes memory signature) internal pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0 || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        return lo + (x % (hi - lo + 1));
    }
}
